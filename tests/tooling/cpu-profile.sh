#!/usr/bin/env bash
# make cpu-profile: run every stage (run-all.sh, as make test does) with the
# kernel's process accounting on, then say where the CPU went: per stage and
# per kind of work (module runs, ansible workers, playbook main processes,
# pytest, pip ...), daemons that left their stage included
# (tests/tooling/cpu_breakdown.py). For finding what to make cheaper; the
# stage summary of make test stays the figure to compare runs with.
#
# Needs root and Debian's acct package (installed here when missing).
# Accounting is one switch for the whole machine: do not run two at once,
# and it is switched off when this script ends, however it ends.
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

[[ ${EUID} -eq 0 ]] || die "process accounting needs root: run 'sudo make cpu-profile'"
if ! command -v accton >/dev/null || ! command -v dump-acct >/dev/null; then
    echo "cpu-profile: installing Debian's acct package (accton, dump-acct)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends acct >/dev/null \
        || die "could not install the acct package: apt-get install acct"
fi
require_venv

work="$(mktemp -d "${TMPDIR:-/tmp}/azure-maintenance-cpu-profile.XXXXXX")"
: >"${work}/pacct"
: >"${work}/stage-pids"
accton "${work}/pacct" >/dev/null
trap 'accton off >/dev/null 2>&1 || true' EXIT

status=0
STAGE_PIDS_FILE="${work}/stage-pids" bash "${TOOLING_DIR}/run-all.sh" || status=$?
accton off >/dev/null

banner "CPU by stage and kind of work (process accounting: ${work}/pacct)"
"${VENV_PYTHON}" "${TOOLING_DIR}/cpu_breakdown.py" --stages "${work}/stage-pids" "${work}/pacct"
exit "${status}"
