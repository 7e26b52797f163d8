#!/usr/bin/env bash
# Every test stage (what `make test` and CI run), in three lanes that run at
# the same time because they mostly wait on different things: the pytest lane
# (units, simulator, system tests, the docs site, the service role's
# integration target, ansible-lint), the ansible-test lane (sanity, the other
# integration targets, build, sanity on the oldest minor, 2.16) and the
# compatibility lane (venvs of the older ansible-core minors, every
# integration target on 2.16).
# Then the rolling-maintenance runs, in three lanes of their own: the system
# tests on this venv's core (2.19, in two worker processes), the rolling
# playbook on 2.16 (every task file and plugin it runs), and on 2.17 then 2.18
# (tests/tooling/run-matrix.sh "rolling" jobs).
# Last and alone, the end-to-end runs (HAProxy under load, ansible-runner).
# Each stage writes its own log, printed whole when the stage ends, and a
# summary with the time of each stage closes the run. A failing stage does not stop
# the later ones, so one run shows every problem; the exit status is non-zero
# when any stage failed. Run tests/tooling/bootstrap.sh first.
#
# Everything a run writes (staged copies, ansible-test output, logs, pytest's
# temporary folders) is under one new folder in $TMPDIR, so two runs on one
# machine, even from one checkout, never share a file or a port.
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/azure-maintenance-test.XXXXXX")"
LOG_DIR="${RUN_DIR}/logs"
mkdir -p "${LOG_DIR}"
echo "make test: working in ${RUN_DIR}"

# A stage is "name:script [arguments]".
# The stages are shared out so that the lanes end at about the same time. The
# integration targets mostly wait (on the simulator's clock, on the daemon):
# the role's target, the longest, runs in the pytest lane, and every other
# target, new ones included, in the ansible-test lane. On 2.16 every target
# runs in the compat lane: the longest stage of all.
SERVICE_TARGET="role_scheduled_events_service"
PYTEST_LANE=("units:run-units.sh" "simulator-tests:run-simulator-tests.sh" "system-tests:run-system-tests.sh"
    "docs:run-docs.sh" "integration-service:run-integration.sh ${SERVICE_TARGET}" "lint:run-lint.sh")
# The 2.16 venv that matrix-2.16-sanity needs is made at the start of the
# compat lane; should this lane get there first, it waits for it (run-matrix.sh
# makes each venv under a lock).
ANSIBLE_TEST_LANE=("sanity:run-sanity.sh" "integration:run-integration.sh --exclude ${SERVICE_TARGET}"
    "build:build-check.sh" "matrix-2.16-sanity:run-matrix.sh 2.16:sanity")
# The matrix's 2.19 jobs are the two lanes above (this venv holds 2.19); the
# venvs of every rolling job are made first, so the last stages only run.
COMPAT_LANE=("matrix-venvs:run-matrix.sh --venvs-only 2.16 2.17:rolling 2.18:rolling"
    "matrix-2.16-integration:run-matrix.sh 2.16:integration")
# The rolling-maintenance runs (real-time clock, HAProxy under load,
# ansible-runner) come last, without the heavy stages beside them. The job on
# the oldest core is never left out: an older core is where the playbook broke.
ROLLING_LANE=("rolling-system-tests:run-rolling-system-tests.sh")
ROLLING_OLDEST_LANE=("matrix-rolling-2.16:run-matrix.sh 2.16:rolling")
ROLLING_COMPAT_LANE=("matrix-rolling:run-matrix.sh 2.17:rolling 2.18:rolling")
E2E_LANE=("e2e-tests:run-e2e-tests.sh")

# CPU seconds (user + system) in a file written by bash's `times`, whose
# second line is what this shell's finished child processes have used. It must
# be written by the lane's shell itself: a command substitution is a new
# process, whose children have used nothing. Processes that leave their parent
# (daemons) are not counted, so a stage's figure is a lower bound; it says
# where the work of a run goes.
cpu_seconds_in() {
    awk 'NR == 2 {
        total = 0
        for (field = 1; field <= 2; field++) {
            split($field, part, "m")
            total += part[1] * 60 + substr(part[2], 1, length(part[2]) - 1)
        }
        printf "%d\n", total
    }' "$1"
}

# Runs the stages of one lane in order; records "name result seconds cpu" lines.
run_lane() {
    local lane="$1"
    shift
    local entry name script started status result cpu_before cpu_used
    local -a arguments
    for entry in "$@"; do
        name="${entry%%:*}"
        read -r -a arguments <<<"${entry#*:}"
        script="${arguments[0]}"
        arguments=("${arguments[@]:1}")
        started=${SECONDS}
        times >"${RUN_DIR}/${lane}.times"
        cpu_before="$(cpu_seconds_in "${RUN_DIR}/${lane}.times")"
        status=0
        # Each stage stages its own copy of the collection and has its own
        # temporary folder, so the lanes never meet.
        mkdir -p "${RUN_DIR}/${name}/tmp"
        BUILD_DIR="${RUN_DIR}/${name}/build" TMPDIR="${RUN_DIR}/${name}/tmp" \
            bash "${TOOLING_DIR}/${script}" "${arguments[@]}" >"${LOG_DIR}/${name}.log" 2>&1 || status=$?
        if [[ ${status} -eq 0 ]]; then result="ok"; else result="FAILED(exit-${status})"; fi
        times >"${RUN_DIR}/${lane}.times"
        cpu_used=$(($(cpu_seconds_in "${RUN_DIR}/${lane}.times") - cpu_before))
        printf '%s %s %d %d\n' "${name}" "${result}" "$((SECONDS - started))" "${cpu_used}" >>"${RUN_DIR}/${lane}.results"
        # One stage's whole log at a time, never interleaved with the other lane.
        {
            flock 9
            cat "${LOG_DIR}/${name}.log"
            printf '\n---- stage %s: %s after %ds, %d CPU-s (%s lane) ----\n' "${name}" "${result}" "$((SECONDS - started))" \
                "${cpu_used}" "${lane}"
        } 9>"${RUN_DIR}/print.lock"
    done
}

# Runs lanes side by side ("lane-name:ARRAY-NAME ..."); returns when all have ended.
run_lanes() {
    local lane pids=() pid
    for lane in "$@"; do
        local -n stages="${lane#*:}"
        run_lane "${lane%%:*}" "${stages[@]}" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do
        wait "${pid}" || true
    done
}

phase_started=${SECONDS}
run_lanes pytest:PYTEST_LANE ansible-test:ANSIBLE_TEST_LANE compat:COMPAT_LANE
first_phase=$((SECONDS - phase_started))
phase_started=${SECONDS}
run_lanes rolling:ROLLING_LANE rolling-oldest:ROLLING_OLDEST_LANE rolling-compat:ROLLING_COMPAT_LANE
rolling_phase=$((SECONDS - phase_started))
phase_started=${SECONDS}
run_lanes e2e:E2E_LANE
last_phase=$((SECONDS - phase_started))

banner "stage summary (three lanes side by side: ${first_phase}s; the rolling runs, three lanes: ${rolling_phase}s; end to end alone: ${last_phase}s; total ${SECONDS}s)"
failed=0
total_cpu=0
for entry in "${PYTEST_LANE[@]}" "${ANSIBLE_TEST_LANE[@]}" "${COMPAT_LANE[@]}" "${ROLLING_LANE[@]}" \
    "${ROLLING_OLDEST_LANE[@]}" "${ROLLING_COMPAT_LANE[@]}" "${E2E_LANE[@]}"; do
    name="${entry%%:*}"
    line="$(grep -h "^${name} " "${RUN_DIR}"/*.results 2>/dev/null || true)"
    if [[ -z "${line}" ]]; then
        printf '  %-24s %-18s\n' "${name}" "DID NOT RUN"
        failed=1
        continue
    fi
    read -r _ result seconds cpu <<<"${line}"
    printf '  %-24s %-18s %5ss %6s CPU-s\n' "${name}" "${result}" "${seconds}" "${cpu}"
    total_cpu=$((total_cpu + cpu))
    [[ "${result}" == "ok" ]] || failed=1
done
# The work of the run against its wall time (docs/development.md says what
# the CPU figure bounds and what it does not).
echo "  the stages used ${total_cpu} CPU-s in ${SECONDS}s on $(nproc) core(s)"

if [[ ${failed} -ne 0 ]]; then
    echo "make test: FAILED (see the stages marked FAILED above; logs kept in ${LOG_DIR})"
    exit 1
fi
rm -rf "${RUN_DIR}"
echo "make test: every stage succeeded"
