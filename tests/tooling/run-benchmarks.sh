#!/usr/bin/env bash
# Run every tests/benchmarks/bench_*.py with the .venv's Python, in name order.
# Benchmarks hold the timing targets; unit tests never assert on time.
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require_venv
banner "benchmarks: tests/benchmarks/bench_*.py"
cd "${REPO_ROOT}"
shopt -s nullglob
scripts=(tests/benchmarks/bench_*.py)

if [[ ${#scripts[@]} -eq 0 ]]; then
    echo "NOTE: no tests/benchmarks/bench_*.py scripts yet: nothing to run."
    exit 0
fi

failed=()
for script in "${scripts[@]}"; do
    banner "benchmark ${script}"
    "${VENV_PYTHON}" "${script}" || failed+=("${script}")
done

if [[ ${#failed[@]} -gt 0 ]]; then
    die "benchmarks failed: ${failed[*]}"
fi
echo "All ${#scripts[@]} benchmark scripts succeeded."
