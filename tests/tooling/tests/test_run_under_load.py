# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""run-under-load.sh (make load-test): where its rounds write, with stand-ins for the suites it runs.

A stand-in suite notes the TMPDIR and BUILD_DIR it was given and writes a
file into each, as pytest and the staging of the collection do; the suite
named by FAIL_SUITE fails in the round named by FAIL_ROUND. A round is
counted by the runs of the suite that opens it (FIRST_SUITE).
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stand_in import stand_in_tooling  # noqa: E402 pylint: disable=wrong-import-position

SUITE_SCRIPTS = ('run-units.sh', 'run-simulator-tests.sh', 'run-system-tests.sh', 'run-rolling-system-tests.sh',
                 'run-e2e-tests.sh')
STAND_IN = r'''#!/usr/bin/env bash
set -euo pipefail
echo "$(basename "$0") ${TMPDIR} ${BUILD_DIR}" >>"${STAND_IN_NOTES}"
mkdir -p "${TMPDIR}/pytest-of-someone" "${BUILD_DIR}"
touch "${TMPDIR}/pytest-of-someone/left" "${BUILD_DIR}/staged"
round=$(grep -c "^${FIRST_SUITE} " "${STAND_IN_NOTES}")
[[ "$(basename "$0")" != "${FAIL_SUITE:-}" || "${round}" != "${FAIL_ROUND:-}" ]] || exit 4
'''


def run_under_load(tmp_path, rounds, fail_round='', fail_suite='run-e2e-tests.sh'):
    tooling = stand_in_tooling(tmp_path, ('run-under-load.sh', 'common.sh'), SUITE_SCRIPTS, STAND_IN)
    temporary = tmp_path / 'tmp'
    temporary.mkdir()
    notes = tmp_path / 'notes'
    env = dict(os.environ, ROUNDS=str(rounds), FAIL_ROUND=str(fail_round), FAIL_SUITE=fail_suite,
               FIRST_SUITE=SUITE_SCRIPTS[0], STAND_IN_NOTES=str(notes), TMPDIR=str(temporary),
               VENV_DIR=sys.prefix, BURN_LIMIT_SECONDS='60')
    env.pop('BUILD_DIR', None)
    result = subprocess.run(['bash', str(tooling / 'run-under-load.sh')], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=120, check=False)
    runs = [line.split(' ') for line in notes.read_text(encoding='utf-8').splitlines()]
    return result, runs, temporary


def test_every_round_writes_in_a_folder_of_its_own_and_a_passing_run_leaves_nothing(tmp_path):
    result, runs, temporary = run_under_load(tmp_path, rounds=2)
    assert result.returncode == 0, result.stdout
    assert [script for script, _tmp, _build in runs] == list(SUITE_SCRIPTS) * 2
    folders = [(tmp, build) for _script, tmp, build in runs]
    # One folder for each round, shared by its suites, inside the run's TMPDIR and not the repository.
    each_round = len(SUITE_SCRIPTS)
    assert [set(folders[:each_round]), set(folders[each_round:])] == [{folders[0]}, {folders[-1]}], folders
    assert folders[0] != folders[-1], folders
    for tmp, build in folders:
        assert tmp.startswith(str(temporary) + os.sep) and build.startswith(str(temporary) + os.sep)
    assert os.listdir(str(temporary)) == []
    assert not (tmp_path / 'repo' / 'build').exists()


def test_a_failed_round_keeps_its_files_and_says_where(tmp_path):
    result, runs, temporary = run_under_load(tmp_path, rounds=3, fail_round=1)
    assert result.returncode != 0
    first_round_tmp = runs[0][1]
    # The later rounds ran, passed and left nothing; the failed one's files are all there.
    assert [script for script, _tmp, _build in runs] == list(SUITE_SCRIPTS) * 3
    assert os.path.exists(os.path.join(first_round_tmp, 'pytest-of-someone', 'left'))
    assert os.path.exists(os.path.join(runs[0][2], 'staged'))
    (run_dir,) = os.listdir(str(temporary))
    assert sorted(os.listdir(str(temporary / run_dir))) == ['round-1']
    round_dir = os.path.dirname(first_round_tmp)
    assert 'round 1: FAILED (exit 4; its files: %s)' % round_dir in result.stdout, result.stdout
    assert 'round 2: ok' in result.stdout and 'round 3: ok' in result.stdout


def test_a_round_stops_at_the_first_suite_that_fails_and_the_next_round_runs_them_all(tmp_path):
    result, runs, dummy = run_under_load(tmp_path, rounds=2, fail_round=1, fail_suite='run-simulator-tests.sh')
    assert result.returncode != 0
    assert [script for script, _tmp, _build in runs] == list(SUITE_SCRIPTS[:2]) + list(SUITE_SCRIPTS)
    assert 'round 1: FAILED (exit 4;' in result.stdout and 'round 2: ok' in result.stdout, result.stdout
