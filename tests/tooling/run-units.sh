#!/usr/bin/env bash
# Unit tests (tests/unit/, and the tooling's own in tests/tooling/tests/) with pytest from the .venv; extra arguments go to pytest.
# In PYTEST_WORKERS pytest-xdist worker processes (run_pytest_in_workers in common.sh: 2 unless set, 0 for none).
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require_venv
banner "unit tests: pytest tests/unit tests/tooling/tests"
cd "${REPO_ROOT}"
run_pytest_in_workers tests/unit tests/tooling/tests -p no:cacheprovider "$@"
