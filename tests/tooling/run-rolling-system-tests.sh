#!/usr/bin/env bash
# The rolling-maintenance system tests (overlapping events against the
# simulator, HAProxy e2e under load, ansible-runner as AWX runs jobs); make test runs them after the other stages, on their own.
set -euo pipefail
SYSTEM_TEST_SUITES="tests/rolling tests/e2e tests/awx" exec bash "$(dirname "${BASH_SOURCE[0]}")/run-system-tests.sh" "$@"
