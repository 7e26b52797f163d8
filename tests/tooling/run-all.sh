#!/usr/bin/env bash
# Every test stage (what `make test` and CI run), as a pool: up to
# MAKE_TEST_SLOTS stages (default 4) run at a time, and each stage starts as
# soon as a slot is free and the stage it needs (if any) has ended, in the
# order of STAGES below: the longest first, so that the short ones fill the
# gaps at the end. Four at a time on two cores, because most stages spend
# much of their time waiting (on a simulated clock, on ansible-test's set-up,
# on a daemon): the integration stages use about half a core each
# (docs/development.md has the figures).
# Stages that play scenarios against the simulator's clock (the rolling
# playbook, HAProxy under load, ansible-runner) run beside the heavy ones:
# their tests assert invariants, not speed, and `make load-test` proves they
# pass with every core kept busy.
# Each stage writes its own log, printed whole when the stage ends, and a
# summary with the time of each stage closes the run. A failing stage does not
# stop the others, so one run shows every problem; the exit status is non-zero
# when any stage failed. Run tests/tooling/bootstrap.sh first.
#
# Everything a run writes (staged copies, ansible-test output, logs, pytest's
# temporary folders) is under one new folder in $TMPDIR, so two runs on one
# machine, even from one checkout, never share a file or a port.
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# The venvs stages make for themselves on first use (in the checkout's
# build/venvs, kept between runs): the matrix's cores and the docs site's.
# `run-all.sh --venvs-only` makes them all, side by side, and stops: make
# test's bootstrap runs it while pip installs .venv's requirements, which keeps
# one core busy and leaves the other idle (bootstrap.sh). The stages then find
# them made; a stage whose venv is missing still makes it.
MATRIX_VENVS="run-matrix.sh --venvs-only 2.16 2.17:rolling 2.18:rolling"

make_stage_venvs() {
    local status=0
    local -a matrix
    read -r -a matrix <<<"${MATRIX_VENVS}"
    # Neither step leaves anything in it that a stage needs.
    BUILD_DIR="$(mktemp -d "${TMPDIR:-/tmp}/azure-maintenance-venvs.XXXXXX")"
    export BUILD_DIR
    start_alongside bash "${TOOLING_DIR}/${matrix[0]}" "${matrix[@]:1}"
    bash "${TOOLING_DIR}/run-docs.sh" --venv-only || status=1
    finish_alongside || status=1
    rm -rf "${BUILD_DIR}"
    return "${status}"
}

if [[ "${1-}" == "--venvs-only" ]]; then
    make_stage_venvs
    exit
fi
[[ $# -eq 0 ]] || die "usage: run-all.sh [--venvs-only]"

SLOTS="${MAKE_TEST_SLOTS:-4}"
[[ "${SLOTS}" =~ ^[1-9][0-9]*$ ]] || die "MAKE_TEST_SLOTS must be a whole number of at least 1, got '${SLOTS}'"

RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/azure-maintenance-test.XXXXXX")"
LOG_DIR="${RUN_DIR}/logs"
mkdir -p "${LOG_DIR}"
echo "make test: working in ${RUN_DIR}, ${SLOTS} stages at a time"

# How fast this machine is, measured before any stage starts (a few seconds),
# so that stage times from different machines can be compared
# (tests/tooling/machine_speed.py). Only a figure: a failure here fails nothing.
MACHINE_SPEED="$("${VENV_PYTHON}" "${TOOLING_DIR}/machine_speed.py" 2>&1)" \
    || MACHINE_SPEED="machine speed: not measured (${MACHINE_SPEED##*$'\n'})"
echo "${MACHINE_SPEED}"

# A stage is "name:script [arguments]", longest first (seconds alone on an
# idle 2-core machine in brackets, from the stage summaries).
SERVICE_TARGET="role_scheduled_events_service"
STAGES=(
    # The venvs of ansible-core 2.16, 2.17 and 2.18 (first time only) [35 s]:
    # first, as every matrix stage needs them.
    "matrix-venvs:${MATRIX_VENVS}"
    # tests/rolling on this venv's core (2.19) in three workers [230 s; 380 s
    # in two, when it was the last stage to end].
    "rolling-system-tests:run-rolling-system-tests.sh"
    # The service role's target, which also runs the daemon's suite against
    # the installed program and the role's runs under systemd (a stand-in)
    # [188 s alone on a machine about twice as fast as the one the other
    # figures come from]. Most of it is CPU: started later, it was the last
    # stage to end.
    "integration-service:run-integration.sh ${SERVICE_TARGET}"
    # Every integration target on the oldest core [370 s].
    "matrix-2.16-integration:run-matrix.sh 2.16:integration"
    # The rolling playbook on the oldest core: never left out, an older core is
    # where the playbook broke [350 s].
    "matrix-rolling-2.16:run-matrix.sh 2.16:rolling"
    # Every integration target but the service role's [310 s].
    "integration:run-integration.sh --exclude ${SERVICE_TARGET}"
    # HAProxy under load, ansible-runner as AWX runs jobs [270 s].
    "e2e-tests:run-e2e-tests.sh"
    # The rolling playbook on the cores between: over IMDS on 2.17, over the
    # fleet plane on 2.18 [90 s].
    "matrix-rolling:run-matrix.sh 2.17:rolling 2.18:rolling"
    "sanity:run-sanity.sh"
    # The fault matrix, EDA under ansible-rulebook, ansible-builder and the
    # fleet plane; the daemon's suite (tests/service) runs in the service
    # role's target, against the program the role installed.
    "system-tests:run-system-tests.sh"
    "matrix-2.16-sanity:run-matrix.sh 2.16:sanity"
    "docs:run-docs.sh"
    "lint:run-lint.sh"
    "units:run-units.sh"
    "simulator-tests:run-simulator-tests.sh"
    "build:build-check.sh"
)
# The stage a stage waits for, where it needs one.
declare -A NEEDS=(
    [matrix-2.16-integration]=matrix-venvs
    [matrix-rolling-2.16]=matrix-venvs
    [matrix-rolling]=matrix-venvs
    [matrix-2.16-sanity]=matrix-venvs
)
# Environment variables of a stage, where it has its own.
declare -A STAGE_ENV=(
    [system-tests]="SYSTEM_TEST_SUITES=tests/faults tests/eda tests/ee tests/fleet"
)

declare -A known_stage=()
for entry in "${STAGES[@]}"; do
    known_stage[${entry%%:*}]=1
done
for name in "${!NEEDS[@]}"; do
    [[ -n "${known_stage[${NEEDS[${name}]}]:-}" ]] || die "stage ${name} needs ${NEEDS[${name}]}, which is not a stage"
done

# CPU seconds (user + system) in a file written by bash's `times`, whose
# second line is what this shell's finished child processes have used. It must
# be written by the stage's own shell: a command substitution is a new
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

# Runs one stage (in a shell of its own, started in the background); records
# "name result seconds cpu start-offset" in its results file.
run_stage() {
    local entry="$1" name script started status=0 result cpu_used
    local -a arguments environment=()
    name="${entry%%:*}"
    read -r -a arguments <<<"${entry#*:}"
    script="${arguments[0]}"
    arguments=("${arguments[@]:1}")
    [[ -z "${STAGE_ENV[${name}]:-}" ]] || environment=("${STAGE_ENV[${name}]}")
    started=${SECONDS}
    # Each stage stages its own copy of the collection and has its own
    # temporary folder, so stages that run at the same time never meet.
    mkdir -p "${RUN_DIR}/${name}/tmp"
    env "${environment[@]}" BUILD_DIR="${RUN_DIR}/${name}/build" TMPDIR="${RUN_DIR}/${name}/tmp" \
        bash "${TOOLING_DIR}/${script}" "${arguments[@]}" >"${LOG_DIR}/${name}.log" 2>&1 || status=$?
    if [[ ${status} -eq 0 ]]; then result="ok"; else result="FAILED(exit-${status})"; fi
    times >"${RUN_DIR}/${name}.times"
    cpu_used="$(cpu_seconds_in "${RUN_DIR}/${name}.times")"
    printf '%s %s %d %d %d\n' "${name}" "${result}" "$((SECONDS - started))" "${cpu_used}" "${started}" \
        >"${RUN_DIR}/${name}.result"
    # One stage's whole log at a time, never interleaved with another's.
    {
        flock 9
        cat "${LOG_DIR}/${name}.log"
        printf '\n---- stage %s: %s after %ds, %d CPU-s (started at +%ds) ----\n' "${name}" "${result}" \
            "$((SECONDS - started))" "${cpu_used}" "${started}"
    } 9>"${RUN_DIR}/print.lock"
}

# The pool: start what may start, wait for any stage to end, again.
declare -A ended=() stage_of_pid=()
pending=("${STAGES[@]}")
running=0
while [[ ${#pending[@]} -gt 0 || ${running} -gt 0 ]]; do
    waiting=()
    for entry in "${pending[@]}"; do
        name="${entry%%:*}"
        needed="${NEEDS[${name}]:-}"
        if [[ ${running} -lt ${SLOTS} && (-z "${needed}" || -n "${ended[${needed}]:-}") ]]; then
            run_stage "${entry}" &
            stage_of_pid[$!]="${name}"
            # For tests/tooling/cpu-profile.sh: which processes belong to which stage.
            [[ -z "${STAGE_PIDS_FILE:-}" ]] || echo "$! ${name}" >>"${STAGE_PIDS_FILE}"
            running=$((running + 1))
        else
            waiting+=("${entry}")
        fi
    done
    pending=("${waiting[@]}")
    ended_pid=""
    # A stage records its own result; its shell's exit status says nothing more.
    wait -n -p ended_pid || true
    [[ -n "${ended_pid}" ]] || die "make test: lost track of the running stages (${running} left)"
    ended[${stage_of_pid[${ended_pid}]}]=1
    running=$((running - 1))
done

banner "stage summary (${SLOTS} stages at a time; total ${SECONDS}s)"
failed=0
total_cpu=0
for entry in "${STAGES[@]}"; do
    name="${entry%%:*}"
    if [[ ! -s "${RUN_DIR}/${name}.result" ]]; then
        printf '  %-24s %-18s\n' "${name}" "DID NOT RUN"
        failed=1
        continue
    fi
    read -r _ result seconds cpu started <"${RUN_DIR}/${name}.result"
    printf '  %-24s %-18s %5ss %6s CPU-s  from +%ss\n' "${name}" "${result}" "${seconds}" "${cpu}" "${started}"
    total_cpu=$((total_cpu + cpu))
    [[ "${result}" == "ok" ]] || failed=1
done
# The work of the run against its wall time (docs/development.md says what
# the CPU figure bounds and what it does not).
echo "  the stages used ${total_cpu} CPU-s in ${SECONDS}s on $(nproc) core(s)"
echo "  ${MACHINE_SPEED}"

if [[ ${failed} -ne 0 ]]; then
    echo "make test: FAILED (see the stages marked FAILED above; logs kept in ${LOG_DIR})"
    exit 1
fi
rm -rf "${RUN_DIR}"
echo "make test: every stage succeeded"
