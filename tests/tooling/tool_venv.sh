# A venv of its own for one tool (the docs site, one ansible-core minor of the
# compatibility matrix), kept between runs; sourced, never run.
# shellcheck shell=bash

# Where tool venvs live: inside the checkout's git-ignored build/, not in
# $BUILD_DIR, so runs that stage into a temporary BUILD_DIR still reuse them.
VENVS_DIR="${VENVS_DIR:-${REPO_ROOT}/build/venvs}"

# prepare_tool_venv VENV LABEL PIP_INSTALL_ARGUMENTS...
# Creates VENV with base_python (common.sh) and installs the arguments into it
# with the project venv's pip, unless it already holds exactly them: a
# fingerprint of the interpreter, the arguments and every requirement file
# they name (-r FILE) is kept in the venv. Two runs from one checkout share the venv: the second waits for the
# first to finish it.
prepare_tool_venv() {
    local venv="$1" label="$2"
    shift 2
    local stamp="${venv}/.tool-venv.sha256" wanted lock_fd argument previous="" python
    require_venv
    python="$(base_python)"
    wanted="$(
        {
            "${python}" -c 'import os, sys; print(sys.version, os.path.realpath(sys.executable))'
            for argument in "$@"; do
                echo "${argument}"
                [[ "${previous}" == "-r" ]] && sha256sum "${argument}"
                previous="${argument}"
            done
        } | sha256sum | cut -d' ' -f1
    )"
    mkdir -p "$(dirname "${venv}")"
    exec {lock_fd}>"${venv}.lock"
    flock "${lock_fd}"
    if [[ -f "${stamp}" && "$(cat "${stamp}")" == "${wanted}" ]]; then
        echo "${label}: venv up to date in ${venv}"
    else
        echo "${label}: creating ${venv} with ${python} ($("${python}" --version))"
        rm -rf "${venv}"
        # No pip of its own: ensurepip would install one from its wheel (about
        # 6 CPU-s a venv, compiling it). The project venv's pip installs into
        # it instead (pip --python, pip 22.3 and later); nothing run from a
        # tool venv needs pip.
        "${python}" -m venv --without-pip "${venv}"
        "${VENV_PYTHON}" -m pip --python "${venv}/bin/python" install --disable-pip-version-check --quiet "$@"
        # Written last, so an interrupted install is redone next time.
        printf '%s\n' "${wanted}" >"${stamp}"
    fi
    exec {lock_fd}>&-
}
