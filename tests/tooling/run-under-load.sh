#!/usr/bin/env bash
# The load proof: run the pytest suites of make test but the docs site's (the
# unit and simulator tests, then the system tests: daemon, faults, EDA,
# rolling scenarios, e2e HAProxy, AWX) ROUNDS times in a row (default 3) while
# every core is kept busy by a CPU burner this script starts and always stops.
# Tests assert invariants, not speed, so they must pass here as they do on an
# idle machine: the unit and simulator tests too, whose few time bounds (a
# deadline kept, a delay not applied twice) must hold with the cores taken.
# Extra arguments go to pytest.
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require_venv
rounds="${ROUNDS:-3}"
# The suites of a round, in this order; a round stops at the first that fails.
SUITES=(run-units.sh run-simulator-tests.sh run-system-tests.sh run-rolling-system-tests.sh run-e2e-tests.sh)
# A burner stops by itself after this long, even if this script is killed.
# The burners are started afresh for each round, so every round runs loaded
# however many rounds there are.
burn_limit_seconds="${BURN_LIMIT_SECONDS:-3600}"
burners=()

stop_burners() {
    kill "${burners[@]}" 2>/dev/null || true
    wait "${burners[@]}" 2>/dev/null || true
    burners=()
}
start_burners() {
    local _
    for _ in $(seq "$(nproc)"); do
        timeout "${burn_limit_seconds}" "${VENV_PYTHON}" -c 'while True: pass' &
        burners+=("$!")
    done
}

# Always stop the burners, however this script ends.
trap stop_burners EXIT

banner "load proof: $(nproc) CPU burner(s) during each of ${rounds} rounds of the unit, simulator and system tests"

# What the rounds write (staged copies, pytest's folders) goes under one new
# folder in $TMPDIR, a folder a round: a round that passed leaves nothing, one
# that failed leaves its folder for a look (later rounds cannot rotate it away).
RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/azure-maintenance-load.XXXXXX")"

summary=()
failed=0
for round in $(seq "${rounds}"); do
    started=${SECONDS}
    status=0
    round_dir="${RUN_DIR}/round-${round}"
    mkdir -p "${round_dir}/tmp"
    start_burners
    ( export BUILD_DIR="${round_dir}/build" TMPDIR="${round_dir}/tmp"
      # set -e does not hold in a subshell whose status is tested: each
      # suite's status is, so the first that fails ends the round with it.
      for suite in "${SUITES[@]}"; do
          bash "${TOOLING_DIR}/${suite}" "$@" || exit
      done ) || status=$?
    stop_burners
    summary+=("$(printf '  round %d: %s in %ds' "${round}" "$([[ ${status} -eq 0 ]] && echo ok || echo "FAILED (exit ${status}; its files: ${round_dir})")" "$((SECONDS - started))")")
    if [[ ${status} -eq 0 ]]; then
        rm -rf "${round_dir}"
    else
        failed=1
    fi
done
[[ ${failed} -ne 0 ]] || rm -rf "${RUN_DIR}"

banner "load proof summary (all cores busy)"
printf '%s\n' "${summary[@]}"
exit "${failed}"
