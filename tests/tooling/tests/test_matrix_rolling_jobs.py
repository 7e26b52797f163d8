# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rolling jobs of run-matrix.sh select the scenarios they say they play.

A job picks its scenarios with pytest's -k, and a -k that matches nothing
makes a suite that is merely empty, which run_pytest reports without failing
(tests/tooling/common.sh): a renamed test would take its scenario out of the
matrix without a word. So every job, and every alternative of a job's -k,
must select a scenario, and the scenario of a normal run must be played over
IMDS and over the fleet plane on the oldest core, on the newest and on one
core between.
"""

import functools
import re
import subprocess
import sys

import pytest

import version_floors

NORMAL_RUN = ('tests/rolling/test_overlapping_events.py::test_four_events_at_once_are_all_handled_within_max_unavailable',
              'tests/rolling/test_overlapping_events_fleet.py::test_four_events_at_once_over_the_fleet_plane')


def rolling_jobs():
    """{core: -k expression or None (every scenario)} of run-matrix.sh's rolling jobs."""
    script = version_floors.read('tests/tooling/run-matrix.sh')
    selectors = dict(re.findall(r'^(ROLLING_\w+)="\$\{ROLLING_ALL\} -k (\S+)"$', script, re.M))
    jobs = re.findall(r'^\s*"(\d+\.\d+) rolling \$\{(ROLLING_\w+)\}"$', script, re.M)
    assert jobs, 'no rolling job found in run-matrix.sh'
    return dict((core, None if variable == 'ROLLING_ALL' else selectors[variable]) for core, variable in jobs)


@functools.lru_cache(maxsize=None)
def collected(expression):
    command = [sys.executable, '-m', 'pytest', '--collect-only', '-q', '-p', 'no:cacheprovider', 'tests/rolling']
    result = subprocess.run(command + (['-k', expression] if expression else []), cwd=version_floors.REPOSITORY_ROOT,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode in (0, 5), result.stdout + result.stderr
    return set(line.split('[')[0] for line in result.stdout.splitlines() if line.startswith('tests/rolling/'))


JOBS = rolling_jobs()
# Oldest first, as the matrix orders its cores.
CORES = [core for core in version_floors.matrix_cores() if core in JOBS]


@pytest.mark.parametrize('core', CORES)
def test_each_rolling_job_and_each_alternative_of_its_selector_selects_a_scenario(core):
    expression = JOBS[core]
    assert collected(expression), 'the %s rolling job selects no scenario' % core
    for alternative in re.findall(r'\(([^()]+)\)', expression or ''):
        assert collected(alternative), 'the %s rolling job names %r, which selects no scenario' % (core, alternative)


def test_a_normal_run_is_played_over_imds_and_the_fleet_plane_at_both_ends_and_between():
    played = dict((core, collected(JOBS[core])) for core in CORES)
    for scenario in NORMAL_RUN:
        assert scenario in played[CORES[0]] and scenario in played[CORES[-1]], (scenario, played)
        assert any(scenario in played[core] for core in CORES[1:-1]), (scenario, played)
