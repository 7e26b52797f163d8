#!/usr/bin/env bash
# The fleet-plane tests: scheduled_events_fleet_info and scheduled_events_fleet_approve
# run by ansible against the simulator's ARM facade (tests/fleet). Every test starts
# its own simulator on ports the kernel chooses, in its own temporary folder.
# Extra arguments go to pytest.
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require_venv
banner "fleet-plane tests: pytest tests/fleet"
cd "${REPO_ROOT}"
run_pytest_in_workers tests/fleet -p no:cacheprovider --durations=10 "$@"
