#!/usr/bin/env bash
# The rolling-maintenance system tests against the simulator (tests/rolling:
# overlapping events, changed events, a hung IMDS, a mixed fleet). make test
# runs them after the heavy stages, beside the rolling jobs of the older cores.
# A scenario mostly waits on its simulated clock (about half a core while it
# runs), so pytest-xdist workers take the scenarios in turn: ROLLING_WORKERS
# of them where it is set, else as many as PYTEST_WORKERS says (2 unless set);
# every scenario has its own simulator, ports and folder.
set -euo pipefail
PYTEST_WORKERS="${ROLLING_WORKERS:-${PYTEST_WORKERS:-}}" SYSTEM_TEST_SUITES="tests/rolling" \
    exec bash "$(dirname "${BASH_SOURCE[0]}")/run-system-tests.sh" "$@"
