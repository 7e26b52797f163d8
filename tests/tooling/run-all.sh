#!/usr/bin/env bash
# Every test stage in order (what `make test` and CI run). A failing stage does
# not stop the later ones, so one run shows every problem; the exit status is
# non-zero when any stage failed. Run tests/tooling/bootstrap.sh first.
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

STAGES=(
    "units:run-units.sh"
    "simulator-tests:run-simulator-tests.sh"
    "sanity:run-sanity.sh"
    "integration:run-integration.sh"
    "system-tests:run-system-tests.sh"
    "build:build-check.sh"
)

summary=()
failed=0
for entry in "${STAGES[@]}"; do
    name="${entry%%:*}"
    script="${entry#*:}"
    started=${SECONDS}
    status=0
    bash "${TOOLING_DIR}/${script}" || status=$?
    if [[ ${status} -eq 0 ]]; then
        result="ok"
    else
        result="FAILED (exit ${status})"
        failed=1
    fi
    summary+=("$(printf '  %-16s %-18s %5ds' "${name}" "${result}" "$((SECONDS - started))")")
done

banner "stage summary"
printf '%s\n' "${summary[@]}"
if [[ ${failed} -ne 0 ]]; then
    echo "make test: FAILED (see the stages marked FAILED above)"
    exit 1
fi
echo "make test: every stage succeeded"
