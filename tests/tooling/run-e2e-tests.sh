#!/usr/bin/env bash
# The rolling playbook end to end: a real HAProxy under steady load (tests/e2e,
# zero failed requests) and ansible-runner running it as AWX does (tests/awx).
# make test runs them last and alone: the load balancer's 1 s server time-out
# must measure draining, not a CPU starved by other stages.
set -euo pipefail
# One test at a time (PYTEST_WORKERS=0), for the same reason.
PYTEST_WORKERS=0 SYSTEM_TEST_SUITES="tests/e2e tests/awx" exec bash "$(dirname "${BASH_SOURCE[0]}")/run-system-tests.sh" "$@"
