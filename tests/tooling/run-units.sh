#!/usr/bin/env bash
# Unit tests (tests/unit/, and the tooling's own in tests/tooling/tests/) with pytest from the .venv; extra arguments go to pytest.
# In PYTEST_WORKERS pytest-xdist worker processes (default 2; 0: in one process).
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require_venv
banner "unit tests: pytest tests/unit tests/tooling/tests"
cd "${REPO_ROOT}"
run_pytest_in "${PYTEST_WORKERS:-2}" tests/unit tests/tooling/tests -p no:cacheprovider "$@"
