#!/usr/bin/env bash
# Tests against real components started on loopback by the tests themselves,
# in one pytest session: the hook daemon against the simulator (tests/service),
# the fault matrix against real processes (tests/faults),
# the EDA source under a real ansible-rulebook (tests/eda), ansible-builder
# (tests/ee), HAProxy under load (tests/e2e) and ansible-runner as AWX runs
# jobs (tests/awx). Every test binds ports the kernel chooses and writes only
# in its own temporary folder. Extra arguments go to pytest. The tests run in
# PYTEST_WORKERS pytest-xdist worker processes (run_pytest_in_workers in
# common.sh: 2 unless set, 0 for none).
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require_venv
suites=()
# SYSTEM_TEST_SUITES overrides the list (run-rolling-system-tests.sh runs the rolling ones on their own).
for suite in ${SYSTEM_TEST_SUITES:-tests/service tests/faults tests/eda tests/ee tests/fleet}; do
    [[ -d "${REPO_ROOT}/${suite}" ]] && suites+=("${suite}")
done
banner "system tests: pytest ${suites[*]}"
cd "${REPO_ROOT}"
run_pytest_in_workers "${suites[@]}" -p no:cacheprovider --durations=15 "$@"
