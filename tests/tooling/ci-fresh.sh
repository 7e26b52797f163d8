#!/usr/bin/env bash
# Run CI as a brand-new machine would see this commit: clone the repository
# (committed state only) into a new temporary folder and run .ci/run there with
# CI=true, an empty HOME and its own TMPDIR, so no venv, ansible-test cache,
# ~/.ansible folder or leftover in /tmp can help. pip's own configuration
# (XDG_CONFIG_HOME) is kept: it says where packages come from.
# Usage: tests/tooling/ci-fresh.sh [--keep]   (--keep leaves the folder for inspection)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
keep=0
[[ "${1:-}" == "--keep" ]] && keep=1

work="$(mktemp -d "${TMPDIR:-/tmp}/azure-maintenance-ci-fresh.XXXXXX")"
mkdir -p "${work}/home" "${work}/tmp"
git clone --quiet "${repo}" "${work}/repo"
echo "ci-fresh: $(git -C "${work}/repo" log -1 --format='%h %s') in ${work}"

status=0
(
    cd "${work}/repo"
    env XDG_CONFIG_HOME="${XDG_CONFIG_HOME:-${HOME}/.config}" HOME="${work}/home" TMPDIR="${work}/tmp" CI=true \
        bash .ci/run </dev/null
) || status=$?

if [[ ${status} -eq 0 && ${keep} -eq 0 ]]; then
    rm -rf "${work}"
else
    echo "ci-fresh: folder kept: ${work}"
fi
echo "ci-fresh: .ci/run exited ${status}"
exit "${status}"
