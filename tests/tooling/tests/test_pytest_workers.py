# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""run_pytest_in_workers (tests/tooling/common.sh): the pytest-xdist options the test scripts pass, and what they refuse."""

import os
import subprocess

import pytest

TOOLING = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMON_SH = os.path.join(TOOLING, 'common.sh')
XDIST_TWO = ['-n', '2', '--dist', 'worksteal']
XDIST_THREE = ['-n', '3', '--dist', 'worksteal']
# pytest, with the plugin that lists the tests that used the most CPU.
PYTEST = ['-m', 'pytest', '-p', 'cpu_per_test']


def stand_in_venv(tmp_path):
    """A venv whose Python prints the arguments it gets, one per line, instead of running pytest."""
    venv_bin = tmp_path / 'venv' / 'bin'
    venv_bin.mkdir(parents=True)
    python = venv_bin / 'python'
    python.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n', encoding='utf-8')
    python.chmod(0o755)
    return tmp_path / 'venv'


def run_bash(tmp_path, command, arguments, workers_env):
    env = {key: value for key, value in os.environ.items() if key not in ('PYTEST_WORKERS', 'ROLLING_WORKERS')}
    env.update(workers_env, VENV_DIR=str(stand_in_venv(tmp_path)))
    return subprocess.run(['bash', '-c', command, 'test'] + list(arguments),
                          env=env, capture_output=True, text=True, timeout=30, check=False)


def run_pytest_in_workers(tmp_path, arguments, **workers_env):
    """Run ``run_pytest_in_workers ARGUMENTS`` with the given PYTEST_WORKERS (unset when not given)."""
    return run_bash(tmp_path, 'source "$1"; shift; run_pytest_in_workers "$@"', [COMMON_SH] + list(arguments),
                    workers_env)


@pytest.mark.parametrize('workers_env, arguments, expected', [
    # The default: two workers, where PYTEST_WORKERS is unset or empty.
    ({}, ['tests/unit', '-q'], PYTEST + XDIST_TWO + ['tests/unit', '-q']),
    ({'PYTEST_WORKERS': ''}, ['tests/unit'], PYTEST + XDIST_TWO + ['tests/unit']),
    ({'PYTEST_WORKERS': '3'}, ['tests/unit'], PYTEST + XDIST_THREE + ['tests/unit']),
    # xdist's options come before the caller's, so a -n of the caller's wins.
    ({}, ['tests/unit', '-n', '0'], PYTEST + XDIST_TWO + ['tests/unit', '-n', '0']),
    # None: pytest's own process, and no xdist option at all (the e2e, the matrix venvs' rolling jobs).
    ({'PYTEST_WORKERS': '0'}, ['tests/e2e', '-q'], PYTEST + ['tests/e2e', '-q']),
])
def test_the_worker_options_pytest_gets(tmp_path, workers_env, arguments, expected):
    done = run_pytest_in_workers(tmp_path, arguments, **workers_env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected


@pytest.mark.parametrize('workers', ['two', '-1', '2.5', ' 2'])
def test_a_number_of_workers_that_is_not_whole_is_refused(tmp_path, workers):
    done = run_pytest_in_workers(tmp_path, ['tests/unit'], PYTEST_WORKERS=workers)
    assert done.returncode == 1
    assert "PYTEST_WORKERS must be a whole number of pytest workers (0: none), got '%s'" % workers in done.stderr
    assert done.stdout == ''


@pytest.mark.parametrize('workers_env, expected_xdist', [
    # Three where neither is set: the scenarios mostly wait.
    ({}, XDIST_THREE),
    ({'PYTEST_WORKERS': ''}, XDIST_THREE),
    ({'PYTEST_WORKERS': '2'}, XDIST_TWO),
    ({'PYTEST_WORKERS': '0'}, []),
    # ROLLING_WORKERS, where set, wins for the rolling scenarios alone.
    ({'PYTEST_WORKERS': '0', 'ROLLING_WORKERS': '2'}, XDIST_TWO),
    ({'ROLLING_WORKERS': '0'}, []),
])
def test_the_rolling_scenarios_take_their_workers_from_rolling_workers_or_else_pytest_workers(
        tmp_path, workers_env, expected_xdist):
    done = run_bash(tmp_path, 'bash "$1"', [os.path.join(TOOLING, 'run-rolling-system-tests.sh')], workers_env)
    assert done.returncode == 0, done.stderr
    printed = done.stdout.splitlines()
    # The stage's banner comes first, then what pytest would get.
    pytest_arguments = printed[printed.index('-m'):]
    assert pytest_arguments[:len(PYTEST + expected_xdist)] == PYTEST + expected_xdist
    assert pytest_arguments[len(PYTEST + expected_xdist)] == 'tests/rolling'
