# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""base_python (tests/tooling/common.sh): the interpreter every test venv is made from.

AZURE_MAINTENANCE_PYTHON when set, else the distribution's python3 when it
is 3.11 or later, else python3 on PATH; never one older than 3.11, and a
venv made from another interpreter is told apart (bootstrap rebuilds it).
The interpreters here are stand-ins: shell scripts that pass or fail the
version check as they are told.
"""

import os
import subprocess
import sys

import pytest

TOOLING = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMON_SH = os.path.join(TOOLING, 'common.sh')


def stand_in_python(directory, name='python3', recent=True):
    """An executable that answers the version check as a Python 3.11+ (exit 0) or an older one (exit 1) would."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text('#!/bin/sh\nexit %d\n' % (0 if recent else 1), encoding='utf-8')
    path.chmod(0o755)
    return path


def run_common(tmp_path, command, path_dirs=(), **env_vars):
    """Run ``command`` after sourcing common.sh, with PATH = ``path_dirs`` then /usr/bin:/bin."""
    env = {key: value for key, value in os.environ.items() if key != 'AZURE_MAINTENANCE_PYTHON'}
    env.update(env_vars, VENV_DIR=str(tmp_path / 'no-venv'),
               PATH=os.pathsep.join([str(folder) for folder in path_dirs] + ['/usr/bin', '/bin']))
    return subprocess.run(['bash', '-c', 'source "$1"; ' + command, 'test', COMMON_SH],
                          env=env, capture_output=True, text=True, timeout=60, check=False)


def test_the_distribution_python_comes_before_the_one_on_path(tmp_path):
    distribution = stand_in_python(tmp_path / 'usr-bin')
    on_path = stand_in_python(tmp_path / 'pyenv-shims')
    result = run_common(tmp_path, 'base_python', [on_path.parent], DISTRIBUTION_PYTHON=str(distribution))
    assert (result.returncode, result.stdout.strip()) == (0, str(distribution)), result.stderr


@pytest.mark.parametrize('distribution_state', ['missing', 'too old'])
def test_python3_on_path_when_the_distribution_has_none_recent_enough(tmp_path, distribution_state):
    distribution = tmp_path / 'usr-bin' / 'python3'
    if distribution_state == 'too old':
        stand_in_python(distribution.parent, recent=False)
    on_path = stand_in_python(tmp_path / 'pyenv-shims')
    result = run_common(tmp_path, 'base_python', [on_path.parent], DISTRIBUTION_PYTHON=str(distribution))
    assert (result.returncode, result.stdout.strip()) == (0, str(on_path)), result.stderr


def test_azure_maintenance_python_wins_and_may_be_a_command_name(tmp_path):
    distribution = stand_in_python(tmp_path / 'usr-bin')
    chosen = stand_in_python(tmp_path / 'opt-python', name='python3.12')
    result = run_common(tmp_path, 'base_python', [chosen.parent], DISTRIBUTION_PYTHON=str(distribution),
                        AZURE_MAINTENANCE_PYTHON='python3.12')
    assert (result.returncode, result.stdout.strip()) == (0, str(chosen)), result.stderr


@pytest.mark.parametrize('setting, expected_error', [
    ('no-such-python', 'AZURE_MAINTENANCE_PYTHON=no-such-python is not an interpreter this shell can run'),
    ('{old}', 'is older than Python 3.11 or does not run: name another'),
])
def test_an_unusable_azure_maintenance_python_is_refused_with_what_to_do(tmp_path, setting, expected_error):
    old = stand_in_python(tmp_path / 'old', recent=False)
    distribution = stand_in_python(tmp_path / 'usr-bin')
    result = run_common(tmp_path, 'base_python', DISTRIBUTION_PYTHON=str(distribution),
                        AZURE_MAINTENANCE_PYTHON=setting.format(old=old))
    assert result.returncode != 0 and result.stdout == ''
    assert expected_error in result.stderr, result.stderr


def test_no_python_recent_enough_anywhere_is_an_error_naming_the_fix(tmp_path):
    on_path = stand_in_python(tmp_path / 'old-bin', recent=False)
    result = run_common(tmp_path, 'base_python', [on_path.parent],
                        DISTRIBUTION_PYTHON=str(tmp_path / 'usr-bin' / 'python3'))
    assert result.returncode != 0 and result.stdout == ''
    assert 'older than Python 3.11: install a newer one or name it in AZURE_MAINTENANCE_PYTHON' in result.stderr


def test_the_floor_check_on_a_real_interpreter(tmp_path):
    # The one running the tests is 3.11 or later: recent enough for 3.11, not for a floor of 99.0.
    command = ('python_is_recent_enough "{python}" && echo recent; '
               'BASE_PYTHON_FLOOR=99.0; python_is_recent_enough "{python}" || echo too-old').format(python=sys.executable)
    result = run_common(tmp_path, command)
    assert result.stdout.split() == ['recent', 'too-old'], result.stderr


def test_a_venv_made_from_another_interpreter_is_told_apart(tmp_path):
    venv = tmp_path / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(venv)], check=True, timeout=120)
    base = os.path.realpath(getattr(sys, '_base_executable', sys.executable))
    check = 'venv_made_from "{}" "{}" && echo same || echo other'
    same = run_common(tmp_path, check.format(venv, base))
    assert same.stdout.strip() == 'same', same.stderr
    other = stand_in_python(tmp_path / 'other')
    different = run_common(tmp_path, check.format(venv, other))
    assert different.stdout.strip() == 'other', different.stderr
    broken = run_common(tmp_path, check.format(tmp_path / 'no-such-venv', base))
    assert broken.stdout.strip() == 'other', broken.stderr
