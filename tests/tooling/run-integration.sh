#!/usr/bin/env bash
# ansible-test integration on a staged copy of the collection, run locally (no
# containers) with the .venv's Python. Arguments are target names (all targets
# when none) or extra ansible-test options.
# The simulator the targets start (setup_simulator) keeps its pid file in this
# run's ansible-test output folder; it is stopped afterwards (stop_simulators.py).
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

stop_simulators() {
    "${VENV_PYTHON}" "${TOOLING_DIR}/stop_simulators.py" "${stage}/tests/output/.tmp/imds-simulator"
}

finish() {
    local status=$?
    stop_simulators || status=1
    exit "${status}"
}

require_venv
python_version="$(venv_python_version)"
banner "integration: ansible-test integration --python ${python_version} --local $*"
stage="$(stage_collection)"
# A simulator left in this copy by an interrupted run is stopped first.
stop_simulators

if [[ ! -d "${stage}/tests/integration/targets" ]]; then
    echo "NOTE: no tests/integration/targets/ yet: nothing to run."
    exit 0
fi

trap finish EXIT
cd "${stage}"
# --local runs ansible-test and the targets with this interpreter, so it
# installs nothing (requirements come from tests/requirements/dev.txt).
ANSIBLE_TEST_CONTENT_ROOT="${stage}" ansible-test integration --python "${python_version}" --local "$@"
