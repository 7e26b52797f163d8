#!/usr/bin/env bash
# ansible-lint with the production profile (the bar for content published on
# Galaxy and Automation Hub) on a staged copy of the collection, so the
# collection's own modules and roles resolve by their FQCN exactly as users
# call them. --offline: nothing is fetched from Galaxy (the collection needs no
# other collection). Settings: .ansible-lint. Extra arguments go to ansible-lint.
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require_venv
[[ -x "${VENV_DIR}/bin/ansible-lint" ]] || die "ansible-lint is not in ${VENV_DIR}: run 'make bootstrap' (tests/requirements/dev.txt lists it)."
banner "lint: ansible-lint --profile production ($("${VENV_DIR}/bin/ansible-lint" --nocolor --version | head -n 1))"
# Its own staging directory: the sanity and integration stages may be using build/ansible_collections.
export BUILD_DIR="${BUILD_DIR}/lint"
stage="$(stage_collection)"
cd "${stage}"
ANSIBLE_COLLECTIONS_PATH="${BUILD_DIR}" "${VENV_DIR}/bin/ansible-lint" --offline --profile production --nocolor "$@"
