#!/usr/bin/env bash
# Compatibility matrix: the collection's tests against every ansible-core minor
# meta/runtime.yml supports. Each minor gets its own venv (ansible-core X.Y.*
# plus tests/requirements/matrix.txt) in build/venvs/ of the checkout
# (git-ignored; VENVS_DIR puts them elsewhere), created on first use and
# reused after, also by runs that stage into a temporary BUILD_DIR. Staged
# copies and logs go to $BUILD_DIR/matrix.
#
# A job is one line of MATRIX_JOBS: "<core minor> <name> <command...>". The
# command runs in the repository root with that core's venv first on PATH and
# VENV_DIR/BUILD_DIR/VENV_PYTHON pointing at it, so the stage scripts
# (run-sanity.sh, run-integration.sh, pytest ...) test that core unchanged.
# Adding a job is adding one line.
#
# Usage: run-matrix.sh [--venvs-only] [SELECTOR...]   --venvs-only prepares the
# venvs of the selected jobs and stops (a CI warm-up step); a selector is a minor ("2.16"), a
# job ("2.16:sanity") or every job of one name ("rolling"); no selector runs every job. MATRIX_PARALLEL=N runs N jobs
# at a time (default 1: CI already runs stages side by side on few cores).
# Every job's output goes to $BUILD_DIR/matrix/logs/<core>-<name>.log; a failing
# job's log is printed, and a summary table closes the run.
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=tests/tooling/tool_venv.sh
source "${TOOLING_DIR}/tool_venv.sh"

MATRIX_DIR="${BUILD_DIR}/matrix"
MATRIX_PARALLEL="${MATRIX_PARALLEL:-1}"
MATRIX_REQUIREMENTS="${REPO_ROOT}/tests/requirements/matrix.txt"

# The integration targets that exercise the modules, the lookup and the
# filters; the middle minors run these, the oldest and newest run all targets.
PLUGIN_TARGETS="module_scheduled_events_info module_scheduled_events_approve lookup_scheduled_events filter_scheduled_events"
# The rolling playbook against the simulator (tests/rolling): every scenario on
# the newest core. On the minors between, the scenario that takes every path of
# a normal run (drain, approve, wait, verify, undrain, a foreign event): over
# IMDS on 2.17, over the fleet plane on 2.18. The oldest and the newest core
# play it both ways, so each way is played on the cores at both ends and on
# one between; both ways on both minors between cost about 30 more CPU-s of
# make test, whose length is its CPU. On the oldest core, also every other
# task file and plugin the playbook runs: the Windows-path tasks, the quiet
# output callback, check mode, the input checks, the over-budget exit and the
# rounds going on from one play of rounds to the next. The scenarios left to
# the newest core differ only in the events they play, and those are decided
# in Python that does not depend on the core. One scenario at a time: make
# test runs these jobs beside the newest core's, which has three workers.
# tests/tooling/tests/test_matrix_rolling_jobs.py checks that every -k below
# still selects what it names.
ROLLING_ALL="env PYTEST_WORKERS=0 SYSTEM_TEST_SUITES=tests/rolling bash tests/tooling/run-system-tests.sh"
ROLLING_IMDS="${ROLLING_ALL} -k four_events_at_once_are_all_handled"
ROLLING_FLEET="${ROLLING_ALL} -k four_events_at_once_over_the_fleet_plane"
ROLLING_OLDEST="${ROLLING_ALL} -k (four_events_at_once)or(mixed_linux)or(quiet_output)or(check_mode)or(misspelled)or(never_fit)or(from_play_to_play)"

MATRIX_JOBS=(
    # The checks whose verdict is about style or a tool of their own (pylint, pep8,
    # yamllint, shellcheck, the changelog's fragments), not about what the older
    # core accepts, are left to the newest core: each costs a venv built with pip
    # on a new machine, pylint minutes on a shared 2-core one.
    "2.16 sanity bash tests/tooling/run-sanity.sh --skip-test pylint --skip-test pep8 --skip-test yamllint --skip-test shellcheck --skip-test changelog"
    # The service role's target leaves out the daemon's own test suite here: it
    # tests the installed program, the same bytes whichever core installed it,
    # and the newest core's run of the target runs it. So are the role's runs
    # under a systemctl stand-in (its systemd path: a minute of this job, the
    # longest of make test), which test the role's choice of systemd calls.
    "2.16 integration env INTEGRATION_VARS=role_test_older_core=true bash tests/tooling/run-integration.sh"
    "2.16 rolling ${ROLLING_OLDEST}"
    "2.17 rolling ${ROLLING_IMDS}"
    "2.17 plugins bash tests/tooling/run-integration.sh ${PLUGIN_TARGETS}"
    "2.18 rolling ${ROLLING_FLEET}"
    "2.18 plugins bash tests/tooling/run-integration.sh ${PLUGIN_TARGETS}"
    "2.19 sanity bash tests/tooling/run-sanity.sh"
    "2.19 integration bash tests/tooling/run-integration.sh"
    "2.19 rolling ${ROLLING_ALL}"
)

core_venv() {
    printf '%s/core-%s' "${VENVS_DIR}" "$1"
}

prepare_core_venv() {
    local core="$1" venv
    venv="$(core_venv "${core}")"
    prepare_tool_venv "${venv}" "ansible-core ${core}" "ansible-core==${core}.*" -r "${MATRIX_REQUIREMENTS}"
    install_zip_compile_cache "${venv}"
    # ansible-test bootstraps pip into its own venvs from this cache (see the script); quick when seeded.
    "${venv}/bin/python" "${TOOLING_DIR}/seed_ansible_test_pip.py" --pip-python "${VENV_PYTHON}"
}

# The installed core must be the wanted minor, accept this Python as a controller, and
# enforce the managed-node Python floor README.md states for it.
check_core_venv() {
    local core="$1" venv first_line
    venv="$(core_venv "${core}")"
    first_line="$("${venv}/bin/ansible" --version)"
    first_line="${first_line%%$'\n'*}"
    [[ "${first_line}" == *"core ${core}."* ]] || die "${venv} does not hold ansible-core ${core}: ${first_line}"
    echo "ansible-core ${core}: ${first_line}"
    # README.md's managed-node Python floor for this core is the one it enforces.
    "${venv}/bin/python" "${TOOLING_DIR}/version_floors.py" check-core
}

selected() {
    local core="$1" name="$2" selector
    [[ ${#SELECTORS[@]} -eq 0 ]] && return 0
    for selector in "${SELECTORS[@]}"; do
        [[ "${selector}" == "${core}" || "${selector}" == "${core}:${name}" || "${selector}" == "${name}" ]] && return 0
    done
    return 1
}

run_job() {
    local core="$1" name="$2" log="$3"
    shift 3
    local venv
    venv="$(core_venv "${core}")"
    (
        cd "${REPO_ROOT}"
        export VENV_DIR="${venv}" VENV_PYTHON="${venv}/bin/python"
        # Each job stages its own copy: jobs of different cores may run side by side.
        export BUILD_DIR="${MATRIX_DIR}/stage-${core}-${name}"
        export PATH="${venv}/bin:${PATH}"
        echo "job ${core}:${name}: $*"
        "$@"
    ) >"${log}" 2>&1
}

venvs_only=0
if [[ "${1-}" == "--venvs-only" ]]; then
    venvs_only=1
    shift
fi
SELECTORS=("$@")
jobs_to_run=()
cores=()
for entry in "${MATRIX_JOBS[@]}"; do
    read -r core name _ <<<"${entry}"
    selected "${core}" "${name}" || continue
    jobs_to_run+=("${entry}")
    [[ " ${cores[*]-} " == *" ${core} "* ]] || cores+=("${core}")
done
[[ ${#jobs_to_run[@]} -gt 0 ]] || die "no matrix job matches: $* (jobs: $(printf '%s\n' "${MATRIX_JOBS[@]}" | awk '{printf "%s:%s ", $1, $2}'))"

banner "matrix: venvs for ansible-core ${cores[*]} in ${VENVS_DIR}"
mkdir -p "${MATRIX_DIR}/logs"
for core in "${cores[@]}"; do
    prepare_core_venv "${core}"
    check_core_venv "${core}"
done
[[ ${venvs_only} -eq 0 ]] || exit 0

banner "matrix: ${#jobs_to_run[@]} jobs, ${MATRIX_PARALLEL} at a time"
declare -A job_status job_seconds job_started
pids=()
names=()
collect_one() {
    local pid="$1" label="$2" status=0
    wait "${pid}" || status=$?
    job_status[${label}]=${status}
    job_seconds[${label}]=$((SECONDS - job_started[${label}]))
    printf '  %-20s %s (%ds)\n' "${label}" "$([[ ${status} -eq 0 ]] && echo ok || echo "FAILED (exit ${status})")" "${job_seconds[${label}]}"
}
for entry in "${jobs_to_run[@]}"; do
    read -r core name command_line <<<"${entry}"
    label="${core}:${name}"
    # Word splitting of the command line is intended: jobs are plain argument lists.
    # shellcheck disable=SC2086
    set -- ${command_line}
    job_started[${label}]=${SECONDS}
    run_job "${core}" "${name}" "${MATRIX_DIR}/logs/${core}-${name}.log" "$@" &
    pids+=($!)
    names+=("${label}")
    if [[ ${#pids[@]} -ge ${MATRIX_PARALLEL} ]]; then
        collect_one "${pids[0]}" "${names[0]}"
        pids=("${pids[@]:1}")
        names=("${names[@]:1}")
    fi
done
while [[ ${#pids[@]} -gt 0 ]]; do
    collect_one "${pids[0]}" "${names[0]}"
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
done

failed=0
for entry in "${jobs_to_run[@]}"; do
    read -r core name _ <<<"${entry}"
    if [[ ${job_status[${core}:${name}]} -ne 0 ]]; then
        failed=1
        banner "log of the failed job ${core}:${name} (${MATRIX_DIR}/logs/${core}-${name}.log)"
        tail -n 80 "${MATRIX_DIR}/logs/${core}-${name}.log"
    fi
done

banner "matrix summary"
for entry in "${jobs_to_run[@]}"; do
    read -r core name _ <<<"${entry}"
    label="${core}:${name}"
    printf '  ansible-core %-5s %-12s %-18s %5ds\n' "${core}" "${name}" \
        "$([[ ${job_status[${label}]} -eq 0 ]] && echo ok || echo "FAILED (exit ${job_status[${label}]})")" "${job_seconds[${label}]}"
done
[[ ${failed} -eq 0 ]] || die "matrix: some jobs failed (logs in ${MATRIX_DIR}/logs)"
echo "matrix: every job succeeded"
