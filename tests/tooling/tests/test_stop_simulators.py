"""Tests for stopping simulators left running by tests, through their pidfiles."""

import subprocess
import sys

import pytest

import stop_simulators

SLEEP_SECONDS = 60


def start_sleeper(*extra_arguments):
    # The extra arguments only make the command line look like a simulator's.
    return subprocess.Popen([sys.executable, '-c', f'import time; time.sleep({SLEEP_SECONDS})'] + list(extra_arguments))


@pytest.fixture(name='processes')
def fixture_processes():
    started = []
    yield started
    for process in started:
        process.kill()
        process.wait(timeout=10)


def test_running_simulator_is_stopped_and_its_pidfile_removed(tmp_path, processes):
    simulator = start_sleeper('imds-simulator')
    processes.append(simulator)
    pidfile = tmp_path / 'sim.pid'
    pidfile.write_text(f'{simulator.pid}\n', encoding='ascii')

    assert stop_simulators.stop_all(str(tmp_path))

    assert simulator.wait(timeout=10) is not None
    assert not pidfile.exists()


def test_other_program_with_a_reused_pid_is_left_running(tmp_path, processes):
    other = start_sleeper()
    processes.append(other)
    pidfile = tmp_path / 'sim.pid'
    pidfile.write_text(str(other.pid), encoding='ascii')

    assert stop_simulators.stop_all(str(tmp_path))

    assert other.poll() is None
    assert not pidfile.exists()


def test_stale_and_unreadable_pidfiles_are_removed(tmp_path):
    # Above the kernel's largest pid_max, so no process can have it.
    (tmp_path / 'gone.pid').write_text('4194304', encoding='ascii')
    (tmp_path / 'garbage.pid').write_text('not a pid', encoding='ascii')

    assert stop_simulators.stop_all(str(tmp_path))

    assert not list(tmp_path.iterdir())


def test_empty_run_directory_is_fine(tmp_path):
    assert stop_simulators.stop_all(str(tmp_path / 'missing'))
