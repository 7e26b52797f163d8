#!/usr/bin/env bash
# Prepare a fresh Debian 12 machine (as root) for every test: Debian packages,
# the .venv with tests/requirements/dev.txt, and ansible-test's pip bootstrap.
# Safe to run again: each step does nothing when its work is already done.
set -euo pipefail

# shellcheck source=tests/tooling/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

DEBIAN_PACKAGES_FILE="${TOOLING_DIR}/debian-packages.txt"
REQUIREMENTS_DIR="${REPO_ROOT}/tests/requirements"
REQUIREMENTS_STAMP="${VENV_DIR}/.requirements.sha256"

listed_debian_packages() {
    sed -e 's/#.*//' -e 's/[[:space:]]//g' "${DEBIAN_PACKAGES_FILE}" | grep -v '^$'
}

debian_package_installed() {
    [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" == 'install ok installed' ]]
}

install_debian_packages() {
    local missing=() package
    while read -r package; do
        debian_package_installed "${package}" || missing+=("${package}")
    done < <(listed_debian_packages)

    if [[ ${#missing[@]} -eq 0 ]]; then
        echo "Debian packages: all present ($(listed_debian_packages | tr '\n' ' '))"
        return
    fi

    [[ ${EUID} -eq 0 ]] || die "Debian packages missing: ${missing[*]}. Install them (sudo apt-get install ${missing[*]}) or run 'make bootstrap' as root."
    echo "Installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# One hash over the interpreter and every requirement file: a change to either
# means pip must run again.
requirements_fingerprint() {
    {
        "${VENV_PYTHON}" -c 'import sys; print(sys.version)'
        find "${REQUIREMENTS_DIR}" -type f -name '*.txt' -print0 | sort -z | xargs -0 sha256sum
    } | sha256sum | cut -d' ' -f1
}

create_venv() {
    local python
    python="$(base_python)"
    # An existing venv is kept even when stale (other shells may be using it):
    # pip brings it up to date below. Only one that cannot run, or that was
    # made from another interpreter than base_python picks now, is rebuilt.
    if [[ -x "${VENV_PYTHON}" ]] && "${VENV_PYTHON}" -c 'import pip' 2>/dev/null; then
        venv_made_from "${VENV_DIR}" "${python}" && return 0
        echo "Rebuilding ${VENV_DIR}: it was made from another interpreter than ${python}"
    fi
    echo "Creating ${VENV_DIR} with ${python} ($("${python}" --version))"
    rm -rf "${VENV_DIR}"
    "${python}" -m venv "${VENV_DIR}" || die "${python} -m venv failed: on Debian, apt-get install python3-venv"
}

install_requirements() {
    local wanted
    wanted="$(requirements_fingerprint)"
    if [[ -f "${REQUIREMENTS_STAMP}" && "$(cat "${REQUIREMENTS_STAMP}")" == "${wanted}" ]]; then
        echo "Python requirements: up to date in ${VENV_DIR}"
        return
    fi
    echo "Installing Python requirements into ${VENV_DIR}"
    "${VENV_PYTHON}" -m pip install --disable-pip-version-check --quiet -r "${REQUIREMENTS_DIR}/dev.txt"
    # Written last, so an interrupted install is retried next time.
    printf '%s\n' "${wanted}" >"${REQUIREMENTS_STAMP}"
}

banner "bootstrap"
install_debian_packages
# Two runs bootstrapping one checkout at once: the second waits, then finds
# the venv ready.
exec {venv_lock}>"${VENV_DIR}.lock"
flock "${venv_lock}"
create_venv
# make test (BOOTSTRAP_STAGE_VENVS=yes) also has the venvs its stages make for
# themselves made here, beside pip installing .venv's requirements: on a new
# machine that install keeps one core busy for most of a minute while the
# other has nothing to do, and the stages would then make those venvs while
# every core is taken. They need only .venv's pip, which create_venv put there.
# Its failure fails nothing here: the stages that need those venvs make them
# again and report. (The lock on .venv is not handed to it.)
if [[ "${BOOTSTRAP_STAGE_VENVS:-}" == "yes" ]]; then
    trap 'finish_alongside || true' EXIT
    start_alongside bash "${TOOLING_DIR}/run-all.sh" --venvs-only {venv_lock}>&-
fi
install_requirements
install_zip_compile_cache "${VENV_DIR}"
"${VENV_PYTHON}" "${TOOLING_DIR}/seed_ansible_test_pip.py"
make_ansible_test_key_pair
if ! finish_alongside; then
    echo "bootstrap: making the stages' venvs failed (above); the stages that need them will make them again and report"
fi
