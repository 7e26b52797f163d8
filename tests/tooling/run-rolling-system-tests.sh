#!/usr/bin/env bash
# The rolling-maintenance system tests against the simulator (tests/rolling:
# overlapping events, changed events, a hung IMDS, a mixed fleet). make test
# runs them after the heavy stages, beside the rolling jobs of the older cores.
# A scenario mostly waits on its simulated clock (about half a core while it
# runs), so ROLLING_WORKERS processes (default 2) take the scenarios in turn;
# every scenario has its own simulator, ports and folder.
set -euo pipefail
PYTEST_WORKERS="${ROLLING_WORKERS:-2}" SYSTEM_TEST_SUITES="tests/rolling" \
    exec bash "$(dirname "${BASH_SOURCE[0]}")/run-system-tests.sh" "$@"
