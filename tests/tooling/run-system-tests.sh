#!/usr/bin/env bash
# Tests against real components started on loopback by the tests themselves:
# the hook daemon against the simulator (tests/service), the EDA source under a
# real ansible-rulebook (tests/eda), ansible-builder (tests/ee), HAProxy under
# load (tests/e2e), ansible-runner as AWX runs jobs (tests/awx) and the rolling
# maintenance controller with overlapping events (tests/rolling).
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require_venv
banner "system tests: pytest tests/service tests/eda tests/ee tests/e2e tests/awx tests/rolling"
cd "${REPO_ROOT}"
status=0
# One pytest run per folder: their conftest.py files share a module name
# ("from conftest import ..."), so one session would import the wrong one.
for suite in tests/service tests/eda tests/ee tests/e2e tests/awx tests/rolling; do
    run_pytest "${suite}" "$@" || status=$?
done
"${VENV_PYTHON}" "${TOOLING_DIR}/stop_simulators.py" || true
exit "${status}"
