# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""run_pytest_in (tests/tooling/common.sh): the pytest-xdist options the test scripts pass, and what they refuse."""

import os
import subprocess

import pytest

COMMON_SH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'common.sh')


def run_pytest_in(tmp_path, *arguments):
    """Run ``run_pytest_in ARGUMENTS`` with a stand-in Python that prints what pytest would get, one per line."""
    venv_bin = tmp_path / 'venv' / 'bin'
    venv_bin.mkdir(parents=True)
    python = venv_bin / 'python'
    python.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n', encoding='utf-8')
    python.chmod(0o755)
    script = 'source "$1"; shift; run_pytest_in "$@"'
    return subprocess.run(['bash', '-c', script, 'test', COMMON_SH] + list(arguments),
                          env=dict(os.environ, VENV_DIR=str(tmp_path / 'venv')),
                          capture_output=True, text=True, timeout=30, check=False)


@pytest.mark.parametrize('arguments, expected', [
    # Two workers: xdist's options come before the caller's, so a -n of the caller's wins.
    (['2', 'tests/unit', '-q'], ['-m', 'pytest', '-n', '2', '--dist', 'worksteal', 'tests/unit', '-q']),
    (['2', 'tests/unit', '-n', '0'], ['-m', 'pytest', '-n', '2', '--dist', 'worksteal', 'tests/unit', '-n', '0']),
    # None: pytest's own process, and no xdist option at all (the matrix venvs' rolling jobs).
    (['0', 'tests/e2e', '-q'], ['-m', 'pytest', 'tests/e2e', '-q']),
])
def test_the_worker_options_pytest_gets(tmp_path, arguments, expected):
    done = run_pytest_in(tmp_path, *arguments)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected


@pytest.mark.parametrize('workers', ['', 'two', '-1', '2.5'])
def test_a_number_of_workers_that_is_not_whole_is_refused(tmp_path, workers):
    done = run_pytest_in(tmp_path, workers, 'tests/unit')
    assert done.returncode == 1
    assert "the number of pytest workers must be a whole number (0: none), got '%s'" % workers in done.stderr
    assert done.stdout == ''
