#!/usr/bin/env bash
# ansible-test integration on a staged copy of the collection, run locally (no
# containers) with the .venv's Python. Arguments are target names (all targets
# when none) or extra ansible-test options. INTEGRATION_VARS="name=value ..."
# hands variables to every target (ansible-test passes the staged copy's
# tests/integration/integration_config.yml to them as extra vars; it passes
# no environment variable of ours).
# The simulator the targets start (setup_simulator) keeps its pid file in this
# run's ansible-test output folder; it is stopped afterwards (stop_simulators.py).
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

stop_simulators() {
    "${VENV_PYTHON}" "${TOOLING_DIR}/stop_simulators.py" "${stage}/tests/output/.tmp/imds-simulator"
}

# The simulator's default world listens on fixed ports; they are held while
# the targets run, so a target that relies on them fails every time here, not
# only when another run on this machine holds them.
hold_default_ports() {
    local ready="${stage}/tests/output/.tmp/held-ports"
    mkdir -p "$(dirname "${ready}")"
    rm -f "${ready}"
    "${VENV_PYTHON}" "${TOOLING_DIR}/hold_ports.py" --simulator-defaults --ready "${ready}" &
    port_holder=$!
    local waited=0
    while [[ ! -s "${ready}" && ${waited} -lt 100 ]]; do
        kill -0 "${port_holder}" 2>/dev/null || { echo "ERROR: hold_ports.py ended before holding the ports" >&2; return 1; }
        sleep 0.1
        waited=$((waited + 1))
    done
    [[ -s "${ready}" ]] || { echo "ERROR: hold_ports.py did not hold the ports within 10 s" >&2; return 1; }
    echo "integration: simulator default ports: $(cat "${ready}")"
}

port_holder=""
finish() {
    local status=$?
    [[ -z "${port_holder}" ]] || kill "${port_holder}" 2>/dev/null || true
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
write_integration_vars "${stage}"
hold_default_ports
cd "${stage}"
# --local runs ansible-test and the targets with this interpreter, so it
# installs nothing (requirements come from tests/requirements/dev.txt).
ANSIBLE_TEST_CONTENT_ROOT="${stage}" ansible-test integration --python "${python_version}" --local "$@"
