#!/usr/bin/env bash
# The fault matrix against real processes (tests/faults/): the hook service, the modules and the EDA source against
# simulators on ports the kernel chooses; extra arguments go to pytest. The unit-level matrix runs with `make units`.
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require_venv
banner "fault matrix: pytest tests/faults"
cd "${REPO_ROOT}"
run_pytest_in_workers tests/faults -p no:cacheprovider "$@"
