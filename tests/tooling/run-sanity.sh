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
# A venv is named by the Python version and its requirements, not by run or
# ansible-core, and one found without its marker is taken for half made and
# removed: two runs sharing a HOME (two make test at once; this core's sanity
# beside the oldest core's, whose venvs are partly the same) that both make
# one fail (FileExistsError in the pip copy, "does not have pip available").
# So the venvs are made first, one run at a time (--prime-venvs runs no test);
# once made they are only read, and the tests run without the lock.
sanity_venvs="${HOME}/.ansible/test/venv"
mkdir -p "$(dirname "${sanity_venvs}")"
export ANSIBLE_TEST_CONTENT_ROOT="${stage}"
if ! priming="$(flock "${sanity_venvs}.lock" ansible-test sanity --prime-venvs --python "${python_version}" "$@" 2>&1)"; then
    printf '%s\n' "${priming}"
    die "ansible-test could not make the sanity venvs under ${sanity_venvs} (output above)"
fi
echo "sanity: ansible-test's venvs are ready in ${sanity_venvs}"
ansible-test sanity --python "${python_version}" "$@"
