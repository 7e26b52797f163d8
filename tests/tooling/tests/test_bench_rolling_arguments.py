# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/benchmarks/bench_rolling.py refuses, before it starts anything, the arguments it could not measure with:
a soak too short to have two samples in a tenth of its rounds ran for minutes and then ended in a traceback."""

import os
import subprocess
import sys

import pytest

BENCHMARK = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                         'benchmarks', 'bench_rolling.py')


@pytest.mark.parametrize('arguments, message', [
    (['--soak-rounds', '30'], '--soak-rounds must be 0 (no soak) or at least 200, not 30'),
    (['--soak-rounds', '-1'], '--soak-rounds must be 0 (no soak) or at least 200, not -1'),
    (['--sizes', '10,x'], "--sizes takes fleet sizes of 1 host or more, separated by commas (10,50,100), not '10,x'"),
    (['--sizes', '0'], "not '0'"),
    (['--sizes', ','], "not ','"),
    (['--idle-rounds', '0'], '--idle-rounds must be 1 or more, not 0'),
    (['--forks', '0'], '--forks must be 1 or more, not 0'),
])
def test_unusable_arguments_are_refused_with_what_to_give(tmp_path, arguments, message):
    done = subprocess.run([sys.executable, BENCHMARK] + arguments, capture_output=True, text=True, timeout=60,
                          cwd=str(tmp_path), check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr
    # Refused before the method line: no simulator or playbook was started.
    assert 'Method:' not in done.stdout
