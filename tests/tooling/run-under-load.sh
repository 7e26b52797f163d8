#!/usr/bin/env bash
# The load proof: run the system tests (daemon, EDA, e2e HAProxy, AWX) ROUNDS
# times in a row (default 3) while every core is kept busy by a CPU burner
# this script starts and always stops. Tests assert invariants, not speed, so
# they must pass here as they do on an idle machine. Extra arguments go to pytest.
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require_venv
rounds="${ROUNDS:-3}"
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

banner "load proof: $(nproc) CPU burner(s) during each of ${rounds} rounds of the system tests"

summary=()
failed=0
for round in $(seq "${rounds}"); do
    started=${SECONDS}
    status=0
    start_burners
    { bash "${TOOLING_DIR}/run-system-tests.sh" "$@" && bash "${TOOLING_DIR}/run-rolling-system-tests.sh" "$@" \
        && bash "${TOOLING_DIR}/run-e2e-tests.sh" "$@"; } || status=$?
    stop_burners
    summary+=("$(printf '  round %d: %s in %ds' "${round}" "$([[ ${status} -eq 0 ]] && echo ok || echo "FAILED (exit ${status})")" "$((SECONDS - started))")")
    [[ ${status} -eq 0 ]] || failed=1
done

banner "load proof summary (all cores busy)"
printf '%s\n' "${summary[@]}"
exit "${failed}"
