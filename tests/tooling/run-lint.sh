#!/usr/bin/env bash
# ansible-lint with the production profile (the bar for content published on
# Galaxy and Automation Hub) on a staged copy of the collection, so the
# collection's own modules and roles resolve by their FQCN exactly as users
# call them. --offline: nothing is fetched from Galaxy (the collection needs no
# other collection). Settings: .ansible-lint. Extra arguments go to ansible-lint.
# First the changelog: its fragments must lint, and releasing the version in
# galaxy.yml (in a scratch copy) must give release notes with a summary.
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require_venv
[[ -x "${VENV_DIR}/bin/ansible-lint" ]] || die "ansible-lint is not in ${VENV_DIR}: run 'make bootstrap' (tests/requirements/dev.txt lists it)."
# Its own staging directory: the sanity and integration stages may be using build/ansible_collections.
export BUILD_DIR="${BUILD_DIR}/lint"
stage="$(stage_collection)"

banner "lint: changelog fragments and a trial release"
cd "${stage}"
antsibull-changelog lint
version="$("${VENV_PYTHON}" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["version"])' galaxy.yml)"
trial="$(mktemp -d "${TMPDIR:-/tmp}/changelog-trial.XXXXXX")"
trap 'rm -rf "${trial}"' EXIT
cp -r galaxy.yml changelogs "${trial}/"
(cd "${trial}" && antsibull-changelog release --version "${version}" --date 2000-01-01 >/dev/null)
grep -q '^Release Summary' "${trial}/CHANGELOG.rst" \
    || die "releasing ${version} gives no release summary: add a release_summary fragment to changelogs/fragments/"
echo "changelog: releasing ${version} gives $(wc -l <"${trial}/CHANGELOG.rst") lines of release notes with a summary"

lint_version="$("${VENV_DIR}/bin/ansible-lint" --nocolor --version)"
banner "lint: ansible-lint --profile production (${lint_version%%$'\n'*})"
ANSIBLE_COLLECTIONS_PATH="${BUILD_DIR}" "${VENV_DIR}/bin/ansible-lint" --offline --profile production --nocolor "$@"
