#!/usr/bin/env bash
# The rolling-maintenance system tests against the simulator (tests/rolling:
# overlapping events, changed events, a hung IMDS, a mixed fleet). make test
# starts them first, as its longest stage, beside the heavy ones.
# A scenario mostly waits: on its rounds' poll interval, its simulated clock,
# a hung IMDS's time-outs (about a quarter of a core while it runs), so
# pytest-xdist workers take the scenarios in turn: ROLLING_WORKERS of them
# where it is set, else as many as PYTEST_WORKERS says where that is set,
# else 3. Three, not the two of the other suites: with two, this stage was the
# last to end in make test while the cores had time to spare; with three it
# ends well before the others for the same CPU (docs/development.md has the
# figures). Every scenario has its own simulator, ports and folder.
set -euo pipefail
PYTEST_WORKERS="${ROLLING_WORKERS:-${PYTEST_WORKERS:-3}}" SYSTEM_TEST_SUITES="tests/rolling" \
    exec bash "$(dirname "${BASH_SOURCE[0]}")/run-system-tests.sh" "$@"
