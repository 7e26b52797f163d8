#!/usr/bin/env bash
# ansible-test integration on a staged copy of the collection, run locally (no
# containers) with the .venv's Python. Arguments are target names (all targets
# when none) or extra ansible-test options.
# Simulators the targets start are stopped afterwards through their pidfiles in
# /tmp/azure-maintenance-simulator/ (the convention is described in stop_simulators.py).
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

stop_simulators() {
    "${VENV_PYTHON}" "${TOOLING_DIR}/stop_simulators.py"
}

finish() {
    local status=$?
    stop_simulators || status=1
    exit "${status}"
}

require_venv
python_version="$(venv_python_version)"
banner "integration: ansible-test integration --python ${python_version} --local $*"
# A simulator left by an interrupted run would still hold its port.
stop_simulators
stage="$(stage_collection)"

if [[ ! -d "${stage}/tests/integration/targets" ]]; then
    echo "NOTE: no tests/integration/targets/ yet: nothing to run."
    exit 0
fi

trap finish EXIT
cd "${stage}"
# --local runs ansible-test and the targets with this interpreter, so it
# installs nothing (requirements come from tests/requirements/dev.txt).
ANSIBLE_TEST_CONTENT_ROOT="${stage}" ansible-test integration --python "${python_version}" --local "$@"
