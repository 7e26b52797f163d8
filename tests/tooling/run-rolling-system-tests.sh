#!/usr/bin/env bash
# The rolling-maintenance system tests against the simulator (tests/rolling:
# overlapping events, changed events, a hung IMDS, a mixed fleet). make test
# runs them after the heavy stages, beside the rolling jobs of the older cores.
set -euo pipefail
SYSTEM_TEST_SUITES="tests/rolling" exec bash "$(dirname "${BASH_SOURCE[0]}")/run-system-tests.sh" "$@"
