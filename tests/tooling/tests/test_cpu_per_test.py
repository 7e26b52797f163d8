# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pytest plugin that lists the tests that used the most CPU (tests/tooling/pytest_plugins/cpu_per_test.py).

Each check runs pytest on a small suite of its own, in a new folder: a test
that waits for a child process burning CPU, one that burns CPU itself, one
that only sleeps. The burners stop at a CPU time, not a wall time, so the
figures do not depend on how busy the machine is.
"""

import os
import re
import subprocess
import sys

PLUGINS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'pytest_plugins')

SUITE = '''
import subprocess
import sys
import time

BURN = "import time\\nwhile time.process_time() < %s:\\n    pass\\n"


def test_waits_for_a_child_that_burns():
    subprocess.run([sys.executable, '-c', BURN % 0.3], check=True)


def test_burns_itself():
    started = time.process_time()
    while time.process_time() - started < 0.1:
        pass


def test_sleeps():
    time.sleep(0.2)
'''
LISTED_LINE = re.compile(r'^ +([0-9]+\.[0-9]{2})  (\S+)$')


def run_suite(tmp_path, *arguments):
    (tmp_path / 'pytest.ini').write_text('[pytest]\n', encoding='utf-8')
    (tmp_path / 'test_suite.py').write_text(SUITE, encoding='utf-8')
    env = dict(os.environ, PYTHONPATH=PLUGINS_DIR)
    env.pop('PYTEST_ADDOPTS', None)
    return subprocess.run([sys.executable, '-m', 'pytest', '-p', 'cpu_per_test', '-p', 'no:cacheprovider']
                          + list(arguments), cwd=str(tmp_path), env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def listed(output):
    """The (seconds, test name) lines of the plugin's section, in order."""
    section = output.split('CPU per test:', 1)[1]
    return [(float(found.group(1)), found.group(2).split('::')[-1])
            for found in map(LISTED_LINE.match, section.splitlines()) if found]


def test_the_dearest_tests_come_first_with_what_their_children_used(tmp_path):
    done = run_suite(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'CPU per test: the 3 dearest of 3' in done.stdout
    figures = listed(done.stdout)
    assert [name for _seconds, name in figures] == [
        'test_waits_for_a_child_that_burns', 'test_burns_itself', 'test_sleeps']
    by_name = dict((name, seconds) for seconds, name in figures)
    assert by_name['test_waits_for_a_child_that_burns'] >= 0.3
    assert by_name['test_burns_itself'] >= 0.1
    # Sleeping costs next to nothing, however long it takes.
    assert by_name['test_sleeps'] < 0.1


def test_figures_measured_in_xdist_workers_reach_the_controller(tmp_path):
    done = run_suite(tmp_path, '-n', '2', '--cpu-per-test=2')
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'CPU per test: the 2 dearest of 3' in done.stdout
    figures = listed(done.stdout)
    assert [name for _seconds, name in figures] == ['test_waits_for_a_child_that_burns', 'test_burns_itself']
    assert figures[0][0] >= 0.3


def test_no_list_is_asked_for_with_zero_and_a_negative_number_is_refused(tmp_path):
    quiet = run_suite(tmp_path, '--cpu-per-test=0', '-k', 'sleeps')
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert 'CPU per test' not in quiet.stdout
    refused = run_suite(tmp_path, '--cpu-per-test=-1')
    assert refused.returncode != 0
    assert '--cpu-per-test takes the number of tests to list, 0 or more' in refused.stderr
