#!/usr/bin/env bash
# The IMDS simulator's own tests (tests/simulator/tests/); extra arguments go to pytest.
# In PYTEST_WORKERS pytest-xdist worker processes (run_pytest_in_workers in common.sh: 2 unless set, 0 for none).
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require_venv
banner "simulator tests: pytest tests/simulator/tests"
cd "${REPO_ROOT}"
run_pytest_in_workers tests/simulator/tests -p no:cacheprovider "$@"
