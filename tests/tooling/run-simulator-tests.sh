#!/usr/bin/env bash
# The IMDS simulator's own tests (tests/simulator/tests/); extra arguments go to pytest.
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require_venv
banner "simulator tests: pytest tests/simulator/tests"
cd "${REPO_ROOT}"
status=0
run_pytest tests/simulator/tests "$@" || status=$?
# A test that failed half-way may leave a simulator behind.
"${VENV_PYTHON}" "${TOOLING_DIR}/stop_simulators.py"
exit "${status}"
