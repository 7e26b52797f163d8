# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""run-all.sh (make test): the pool of stages, with stand-in stage scripts that only note when they start and end.

A stand-in stage holds its slot until the test lets it go (a file appears),
so which stages share the first slots does not depend on how fast anything
runs.
"""

import os
import re
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stand_in import stand_in_tooling  # noqa: E402 pylint: disable=wrong-import-position

STAGE_SCRIPTS = ('run-matrix.sh', 'run-rolling-system-tests.sh', 'run-integration.sh', 'run-e2e-tests.sh',
                 'run-sanity.sh', 'run-system-tests.sh', 'run-docs.sh', 'run-lint.sh', 'run-units.sh',
                 'run-simulator-tests.sh', 'build-check.sh')
MATRIX_STAGES = ('matrix-2.16-integration', 'matrix-rolling-2.16', 'matrix-rolling', 'matrix-2.16-sanity')
# A stand-in stage: its name is its BUILD_DIR's folder (run-all.sh gives each stage its own).
STAND_IN = r'''#!/usr/bin/env bash
set -euo pipefail
stage="$(basename "$(dirname "${BUILD_DIR}")")"
notes="${STAND_IN_DIR}/notes"
{ flock 9; echo "start ${stage} ${SYSTEM_TEST_SUITES:-}" >>"${notes}"; echo "${PPID} ${stage}" >>"${notes}.parents"; } 9>"${notes}.lock"
for _ in $(seq 600); do
    [[ -e "${STAND_IN_DIR}/release" ]] && break
    sleep 0.05
done
echo "log line of ${stage}"
{ flock 9; echo "end ${stage}" >>"${notes}"; } 9>"${notes}.lock"
[[ "${stage}" != "${FAIL_STAGE:-}" ]] || exit 3
'''


# A stand-in for tests/tooling/machine_speed.py, whose real figures take seconds to measure.
MACHINE_SPEED = "print('machine speed: stand-in figures')\n"


def start_run_all(tmp_path, machine_speed=MACHINE_SPEED, **env_overrides):
    tooling = stand_in_tooling(tmp_path, ('run-all.sh', 'common.sh'), STAGE_SCRIPTS, STAND_IN)
    (tooling / 'machine_speed.py').write_text(machine_speed, encoding='utf-8')
    stand_in_dir = tmp_path / 'stand-in'
    stand_in_dir.mkdir()
    temporary = tmp_path / 'tmp'
    temporary.mkdir()
    env = {key: value for key, value in os.environ.items() if key not in ('MAKE_TEST_SLOTS', 'FAIL_STAGE')}
    # The stand-in repository has no .venv: the machine speed runs with the tests' own Python.
    env.update(STAND_IN_DIR=str(stand_in_dir), TMPDIR=str(temporary), VENV_DIR=sys.prefix, **env_overrides)
    process = subprocess.Popen(['bash', str(tooling / 'run-all.sh')], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    return process, stand_in_dir


def notes(stand_in_dir):
    path = stand_in_dir / 'notes'
    if not path.exists():
        return []
    return [line.split(' ', 2) for line in path.read_text(encoding='utf-8').splitlines()]


def release_when_started(process, stand_in_dir, count, timeout=60):
    """Wait (bounded) until ``count`` stages have started, then let every stage end; return the first notes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        seen = notes(stand_in_dir)
        if sum(1 for note in seen if note[0] == 'start') >= count:
            break
        time.sleep(0.05)
    first = notes(stand_in_dir)
    (stand_in_dir / 'release').write_text('', encoding='utf-8')
    output = process.communicate(timeout=timeout)[0]
    return first, output


def most_at_once(all_notes):
    running = most = 0
    for note in all_notes:
        running += 1 if note[0] == 'start' else -1
        most = max(most, running)
    return most


def test_four_stages_at_a_time_longest_first_each_once_the_matrix_after_its_venvs(tmp_path):
    process, stand_in_dir = start_run_all(tmp_path)
    first, output = release_when_started(process, stand_in_dir, 4)
    assert process.returncode == 0, output
    # The first slots: the venvs and the longest stages that need nothing.
    first_four = ['integration', 'integration-service', 'matrix-venvs', 'rolling-system-tests']
    assert sorted(note[1] for note in first) == first_four, first
    everything = notes(stand_in_dir)
    started = [note[1] for note in everything if note[0] == 'start']
    assert sorted(started) == sorted(set(started)) and len(started) == 16, started
    assert most_at_once(everything) == 4
    venvs_ended = everything.index(['end', 'matrix-venvs'])
    for stage in MATRIX_STAGES:
        assert everything.index(['start', stage, '']) > venvs_ended, everything
    # The system tests leave the daemon's suite to the service role's target.
    assert ['start', 'system-tests', 'tests/faults tests/eda tests/ee tests/fleet'] in everything
    # Each stage's log is printed whole, then its line; the summary names every stage.
    assert re.search(r'log line of units\n\n---- stage units: ok after \d+s', output), output
    assert re.search(r'^  build +ok +\d+s +\d+ CPU-s  from \+\d+s$', output, re.M), output
    # How fast the machine was: measured before the first stage, and in the summary.
    assert output.index('machine speed: stand-in figures') < output.index('---- stage'), output
    assert re.search(r'CPU-s in \d+s on \d+ core\(s\)\n  machine speed: stand-in figures\n', output), output
    assert 'make test: every stage succeeded' in output


def test_a_machine_speed_that_cannot_be_measured_is_said_and_fails_nothing(tmp_path):
    failing = "import sys\nprint('something went wrong')\nsys.exit('no fork here')\n"
    process, stand_in_dir = start_run_all(tmp_path, machine_speed=failing)
    _first, output = release_when_started(process, stand_in_dir, 4)
    assert process.returncode == 0, output
    assert '\n  machine speed: not measured (no fork here)\n' in output, output
    assert 'make test: every stage succeeded' in output


def test_one_slot_runs_the_stages_one_after_another(tmp_path):
    process, stand_in_dir = start_run_all(tmp_path, MAKE_TEST_SLOTS='1')
    first, output = release_when_started(process, stand_in_dir, 1)
    assert process.returncode == 0, output
    assert [note[1] for note in first] == ['matrix-venvs']
    assert most_at_once(notes(stand_in_dir)) == 1


def test_a_failing_stage_fails_the_run_after_every_other_stage_ran(tmp_path):
    process, stand_in_dir = start_run_all(tmp_path, FAIL_STAGE='sanity')
    _first, output = release_when_started(process, stand_in_dir, 4)
    assert process.returncode == 1, output
    assert len([note for note in notes(stand_in_dir) if note[0] == 'end']) == 16
    assert re.search(r'^  sanity +FAILED\(exit-3\)', output, re.M), output
    assert 'make test: FAILED' in output


def test_the_pid_of_each_stage_shell_is_written_where_cpu_profile_asks(tmp_path):
    stage_pids = tmp_path / 'stage-pids'
    process, stand_in_dir = start_run_all(tmp_path, STAGE_PIDS_FILE=str(stage_pids))
    _first, output = release_when_started(process, stand_in_dir, 4)
    assert process.returncode == 0, output
    written = sorted(stage_pids.read_text(encoding='utf-8').splitlines())
    # The shell a stage's script runs under, once per stage.
    parents = sorted((stand_in_dir / 'notes.parents').read_text(encoding='utf-8').splitlines())
    assert written == parents and len(written) == 16, (written, parents)


@pytest.mark.parametrize('slots', ['0', 'three', '-1', ' 2'])
def test_a_number_of_slots_that_is_not_a_whole_number_above_zero_is_refused(tmp_path, slots):
    process, stand_in_dir = start_run_all(tmp_path, MAKE_TEST_SLOTS=slots)
    output = process.communicate(timeout=60)[0]
    assert process.returncode == 1
    assert "MAKE_TEST_SLOTS must be a whole number of at least 1, got '%s'" % slots in output
    assert notes(stand_in_dir) == []
