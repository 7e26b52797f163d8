# Shared settings for the tests/tooling/*.sh scripts; sourced, never run.
# shellcheck shell=bash

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TOOLING_DIR="${REPO_ROOT}/tests/tooling"
VENV_DIR="${VENV_DIR:-${REPO_ROOT}/.venv}"
BUILD_DIR="${BUILD_DIR:-${REPO_ROOT}/build}"
VENV_PYTHON="${VENV_DIR}/bin/python"

# Scripts with "#!/usr/bin/env python" (the shebang ansible-test's sanity test
# allows) must find the project's interpreter even where Debian ships no "python".
export PATH="${VENV_DIR}/bin:${PATH}"

# Some machines and container images set PYTHONDONTWRITEBYTECODE=1 (this
# project's CI machine does). Python then compiles the project's own code (the
# simulator, the harnesses, every test module, which pytest also rewrites)
# from source in every process, and the stages start hundreds of them. Let
# Python keep its compiled files: __pycache__ folders are git-ignored and
# never staged into the collection (stage_collection.py). The collection's
# own plugins are compiled by ansible's collection loader either way.
unset PYTHONDONTWRITEBYTECODE

banner() {
    printf '\n==== %s ====\n' "$*"
}

die() {
    printf 'ERROR: %s\n' "$*" >&2
    exit 1
}

# Work that goes on beside a step that keeps one core busy and leaves the
# other idle (bootstrap.sh: pip installing .venv's requirements), one at a
# time. start_alongside COMMAND... starts it in the background with its output
# in a file of its own; finish_alongside waits for it, prints that output under
# a banner with its exit status, and returns that status (0 when none was
# started). A script that starts one also finishes it on every way out (an EXIT
# trap), so nothing it started is left running.
ALONGSIDE_PID=""
ALONGSIDE_LOG=""
ALONGSIDE_COMMAND=""
start_alongside() {
    [[ -z "${ALONGSIDE_PID}" ]] || die "start_alongside: '${ALONGSIDE_COMMAND}' has not been finished"
    ALONGSIDE_LOG="$(mktemp "${TMPDIR:-/tmp}/azure-maintenance-alongside.XXXXXX")"
    ALONGSIDE_COMMAND="$*"
    "$@" >"${ALONGSIDE_LOG}" 2>&1 &
    ALONGSIDE_PID=$!
}

finish_alongside() {
    local status=0
    [[ -n "${ALONGSIDE_PID}" ]] || return 0
    wait "${ALONGSIDE_PID}" || status=$?
    ALONGSIDE_PID=""
    banner "alongside: ${ALONGSIDE_COMMAND} (exit ${status})"
    cat "${ALONGSIDE_LOG}"
    rm -f "${ALONGSIDE_LOG}"
    return "${status}"
}

require_venv() {
    [[ -x "${VENV_PYTHON}" ]] || die "${VENV_DIR} is missing: run 'make bootstrap' first."
}

# The oldest Python the test venvs may be made from (ansible-core 2.19's
# controller floor), and the distribution's interpreter (the python3 package
# debian-packages.txt installs; a variable for tests/tooling/tests).
BASE_PYTHON_FLOOR="3.11"
DISTRIBUTION_PYTHON="${DISTRIBUTION_PYTHON:-/usr/bin/python3}"

# Prints the interpreter every test venv (.venv, the matrix and docs venvs) is
# made from: AZURE_MAINTENANCE_PYTHON when set; else the distribution's
# python3 when it is recent enough; else python3 on PATH. The distribution's
# before PATH's because PATH may lead to a build without profile-guided
# optimisation (pyenv builds so unless told otherwise), which ran the unit
# tests 10-18 % slower here (docs/development.md has the figures).
base_python() {
    local candidate
    if [[ -n "${AZURE_MAINTENANCE_PYTHON:-}" ]]; then
        candidate="$(command -v "${AZURE_MAINTENANCE_PYTHON}")" \
            || die "AZURE_MAINTENANCE_PYTHON=${AZURE_MAINTENANCE_PYTHON} is not an interpreter this shell can run"
        python_is_recent_enough "${candidate}" \
            || die "AZURE_MAINTENANCE_PYTHON=${AZURE_MAINTENANCE_PYTHON} is older than Python ${BASE_PYTHON_FLOOR} or does not run: name another"
    elif [[ -x "${DISTRIBUTION_PYTHON}" ]] && python_is_recent_enough "${DISTRIBUTION_PYTHON}"; then
        candidate="${DISTRIBUTION_PYTHON}"
    else
        candidate="$(command -v python3)" || die "python3 is not installed: apt-get install python3 python3-venv"
        python_is_recent_enough "${candidate}" \
            || die "${candidate} is older than Python ${BASE_PYTHON_FLOOR}: install a newer one or name it in AZURE_MAINTENANCE_PYTHON"
    fi
    printf '%s\n' "${candidate}"
}

python_is_recent_enough() {
    "$1" -c "import sys; sys.exit(sys.version_info[:2] < tuple(map(int, '${BASE_PYTHON_FLOOR}'.split('.'))))" \
        2>/dev/null
}

# venv_made_from VENV PYTHON: whether the venv VENV runs and was made from the
# interpreter PYTHON (symbolic links resolved on both sides).
venv_made_from() {
    local made_from wanted
    made_from="$("$1/bin/python" -c 'import os, sys; print(os.path.realpath(sys._base_executable))' 2>/dev/null)" \
        || return 1
    wanted="$(realpath "$2")" || return 1
    [[ -n "${made_from}" && "${made_from}" == "${wanted}" ]]
}

# The X.Y version of the venv's Python; ansible-test runs only this version so
# it never needs interpreters or containers the machine does not have.
venv_python_version() {
    "${VENV_PYTHON}" -c 'import sys; print("%d.%d" % sys.version_info[:2])'
}

# Copies the collection to build/ansible_collections/<ns>/<name>, checks that
# ansible-test sees exactly the copied files, and prints the copy's path.
stage_collection() {
    "${VENV_PYTHON}" "${TOOLING_DIR}/stage_collection.py" --source "${REPO_ROOT}" --build-dir "${BUILD_DIR}"
}

# pytest exits 5 when it collects no test; a suite that is still empty is
# reported but is not a failure. Every suite ends with the tests that used the
# most CPU (tests/tooling/pytest_plugins/cpu_per_test.py; --cpu-per-test=N).
run_pytest() {
    local status=0
    PYTHONPATH="${TOOLING_DIR}/pytest_plugins${PYTHONPATH:+:${PYTHONPATH}}" \
        "${VENV_PYTHON}" -m pytest -p cpu_per_test "$@" || status=$?
    if [[ ${status} -eq 5 ]]; then
        printf 'NOTE: pytest collected no tests in %s\n' "$*"
        return 0
    fi
    return "${status}"
}

# run_pytest_in_workers ARGUMENTS...: run_pytest in PYTEST_WORKERS pytest-xdist
# worker processes (2 when it is unset or empty), or in pytest's own process,
# one test after another, for 0. Most suites mostly wait (on a simulator's
# clock, a daemon, a subprocess), so two workers nearly halve them; every test
# has its own ports and folder. A -n among the ARGUMENTS wins: it comes later.
run_pytest_in_workers() {
    local workers="${PYTEST_WORKERS:-2}"
    [[ "${workers}" =~ ^[0-9]+$ ]] || die "PYTEST_WORKERS must be a whole number of pytest workers (0: none), got '${workers}'"
    if [[ "${workers}" -gt 0 ]]; then
        run_pytest -n "${workers}" --dist worksteal "$@"
    else
        run_pytest "$@"
    fi
}

# write_integration_vars STAGED_COLLECTION: hand INTEGRATION_VARS
# ("name=value ...") to every integration target. ansible-test passes the
# collection's tests/integration/integration_config.yml to the targets as
# extra vars, and no environment variable of ours, so they go there. The
# staged copy is made afresh for every run, so one run's variables never
# reach the next; a file of the collection's own is added to.
write_integration_vars() {
    local config="$1/tests/integration/integration_config.yml" pair
    local -a pairs
    read -r -a pairs <<<"${INTEGRATION_VARS:-}"
    [[ ${#pairs[@]} -gt 0 ]] || return 0
    [[ -e "${config}" ]] || echo "---" >"${config}"
    for pair in "${pairs[@]}"; do
        [[ "${pair}" =~ ^[a-z_][a-z0-9_]*=[^[:space:]]+$ ]] || die "INTEGRATION_VARS: '${pair}' is not name=value (a variable name in lower case)"
        printf '%s: %s\n' "${pair%%=*}" "${pair#*=}" >>"${config}"
    done
    echo "integration: variables for every target: ${INTEGRATION_VARS}"
}

# ansible-test integration makes ~/.ansible/test/id_rsa on its first run, with
# ssh-keygen, which asks before overwriting and so fails when another
# ansible-test (another stage of make test, every core of the matrix) made it
# a moment before. bootstrap.sh makes it once, before any stage starts, as
# ansible-test makes it (PEM, with the RSA header paramiko reads); a lock keeps
# two bootstraps of one HOME from making it together.
make_ansible_test_key_pair() {
    local folder="${HOME}/.ansible/test"
    mkdir -p "${folder}"
    (
        flock 9
        if [[ ! -f "${folder}/id_rsa" || ! -f "${folder}/id_rsa.pub" ]]; then
            rm -f "${folder}/id_rsa" "${folder}/id_rsa.pub"
            ssh-keygen -m PEM -q -t rsa -N '' -f "${folder}/id_rsa"
            sed -i -E 's/(BEGIN|END) PRIVATE KEY/\1 RSA PRIVATE KEY/' "${folder}/id_rsa"
            echo "ansible-test's SSH key pair: made in ${folder}"
        fi
    ) 9>"${folder}/.key-pair.lock"
}

# install_zip_compile_cache VENV: the venv's Python keeps what it compiles from
# zip archives (every module run's AnsiballZ payload), as it keeps .pyc files
# for other imports: tests/tooling/zip_compile_cache.py, installed at start-up
# by a .pth line. Test venvs only; quick when already there.
install_zip_compile_cache() {
    local venv="$1" site_packages
    site_packages="$("${venv}/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    if ! cmp -s "${TOOLING_DIR}/zip_compile_cache.py" "${site_packages}/_azure_maintenance_zip_compile_cache.py"; then
        cp "${TOOLING_DIR}/zip_compile_cache.py" "${site_packages}/_azure_maintenance_zip_compile_cache.py.new"
        mv "${site_packages}/_azure_maintenance_zip_compile_cache.py.new" \
            "${site_packages}/_azure_maintenance_zip_compile_cache.py"
    fi
    printf 'import _azure_maintenance_zip_compile_cache; _azure_maintenance_zip_compile_cache.install()\n' \
        >"${site_packages}/_azure_maintenance_zip_compile_cache.pth"
}
