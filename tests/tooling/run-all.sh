#!/usr/bin/env bash
# Every test stage (what `make test` and CI run), in two lanes that run at the
# same time because they hardly compete: the pytest lane (units, simulator,
# system tests) and the ansible-test lane (sanity, integration, build). Each
# stage writes its own log, printed whole when the stage ends, and a summary
# with the time of each stage closes the run. A failing stage does not stop
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

PYTEST_LANE=("units:run-units.sh" "simulator-tests:run-simulator-tests.sh" "system-tests:run-system-tests.sh")
ANSIBLE_TEST_LANE=("sanity:run-sanity.sh" "integration:run-integration.sh" "build:build-check.sh")

# Runs the stages of one lane in order; records "name result seconds" lines.
run_lane() {
    local lane="$1"
    shift
    local entry name script started status result
    for entry in "$@"; do
        name="${entry%%:*}"
        script="${entry#*:}"
        started=${SECONDS}
        status=0
        # Each stage stages its own copy of the collection and has its own
        # temporary folder, so the lanes never meet.
        mkdir -p "${RUN_DIR}/${name}/tmp"
        BUILD_DIR="${RUN_DIR}/${name}/build" TMPDIR="${RUN_DIR}/${name}/tmp" \
            bash "${TOOLING_DIR}/${script}" >"${LOG_DIR}/${name}.log" 2>&1 || status=$?
        if [[ ${status} -eq 0 ]]; then result="ok"; else result="FAILED(exit-${status})"; fi
        printf '%s %s %d\n' "${name}" "${result}" "$((SECONDS - started))" >>"${RUN_DIR}/${lane}.results"
        # One stage's whole log at a time, never interleaved with the other lane.
        {
            flock 9
            cat "${LOG_DIR}/${name}.log"
            printf '\n---- stage %s: %s after %ds (%s lane) ----\n' "${name}" "${result}" "$((SECONDS - started))" "${lane}"
        } 9>"${RUN_DIR}/print.lock"
    done
}

run_lane pytest "${PYTEST_LANE[@]}" &
pytest_lane=$!
run_lane ansible-test "${ANSIBLE_TEST_LANE[@]}" &
ansible_test_lane=$!
wait "${pytest_lane}" || true
wait "${ansible_test_lane}" || true

banner "stage summary (lanes ran side by side; total ${SECONDS}s)"
failed=0
for entry in "${PYTEST_LANE[@]}" "${ANSIBLE_TEST_LANE[@]}"; do
    name="${entry%%:*}"
    line="$(grep -h "^${name} " "${RUN_DIR}"/*.results 2>/dev/null || true)"
    if [[ -z "${line}" ]]; then
        printf '  %-16s %-18s\n' "${name}" "DID NOT RUN"
        failed=1
        continue
    fi
    read -r _ result seconds <<<"${line}"
    printf '  %-16s %-18s %5ss\n' "${name}" "${result}" "${seconds}"
    [[ "${result}" == "ok" ]] || failed=1
done

if [[ ${failed} -ne 0 ]]; then
    echo "make test: FAILED (see the stages marked FAILED above; logs kept in ${LOG_DIR})"
    exit 1
fi
rm -rf "${RUN_DIR}"
echo "make test: every stage succeeded"
