#!/usr/bin/env bash
# ansible-test sanity on a staged copy of the collection, with the .venv's
# Python only (tests for other versions or containers are not selected).
# Extra arguments go to ansible-test, e.g. --test pylint.
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require_venv
python_version="$(venv_python_version)"
banner "sanity: ansible-test sanity --python ${python_version}"
stage="$(stage_collection)"
cd "${stage}"
# ansible-test builds one venv per sanity test under ~/.ansible/test/venv and
# bootstraps pip into each from its get-pip cache, which bootstrap.sh fills
# (see seed_ansible_test_pip.py): no --requirements, no download but PyPI.
ANSIBLE_TEST_CONTENT_ROOT="${stage}" ansible-test sanity --python "${python_version}" "$@"
