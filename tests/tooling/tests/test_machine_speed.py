# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/tooling/machine_speed.py: the figures run-all.sh prints so that runs on different machines compare.

What the figures are worth is not tested here (they are CPU times of this machine); that they are measured, and
that the work measured is the same every time, is.
"""

import os
import re
import subprocess
import sys
import tracemalloc

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import machine_speed  # noqa: E402 pylint: disable=wrong-import-position,import-error

SCRIPT = machine_speed.__file__
LINE = re.compile(r'^machine speed: Python (\d+) ms, a fork of a (\d+) MB process (\d+\.\d) ms '
                  r'\(CPU time, median of (\d+); tests/tooling/machine_speed\.py\)$')


def test_one_line_with_both_figures():
    run = subprocess.run([sys.executable, SCRIPT, '--repeat', '1', '--forks', '3', '--megabytes', '2'],
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == 1, run.stdout
    figures = LINE.match(lines[0])
    assert figures, lines[0]
    assert figures.group(2) == '2' and figures.group(4) == '1'
    # Measured, not made up: a fork of a process costs some CPU time, and so does the Python work.
    assert int(figures.group(1)) > 0 and float(figures.group(3)) > 0


def test_the_python_work_is_the_same_every_time():
    assert machine_speed.python_work() == machine_speed.python_work() > 0


def test_the_forked_heap_is_about_the_size_asked_for():
    tracemalloc.start()
    try:
        heap = machine_speed.make_heap(4)
        allocated = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert 0.8 * 4 * 2 ** 20 < allocated < 1.25 * 4 * 2 ** 20, allocated
    # Each part a child or the parent reads is a different slice of it.
    assert machine_speed.touch(heap, 0, 2) != machine_speed.touch(heap, 1, 2)


@pytest.mark.parametrize('option', ['--repeat', '--forks', '--megabytes'])
def test_a_figure_below_one_is_refused(option):
    run = subprocess.run([sys.executable, SCRIPT, option, '0'], capture_output=True, text=True, timeout=60,
                         check=False)
    assert run.returncode == 2
    assert '%s must be at least 1, got 0' % option in run.stderr
