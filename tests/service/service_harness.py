# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Helpers and fixtures running the hook service daemon against the IMDS simulator.

Imported by name (``from service_harness import ...``), never as ``conftest``,
so that every system-test folder can run in one pytest session; the folder's
conftest.py only registers the fixtures defined here.

The daemon under test is the one in the role (default) or the one the role
installed (SCHEDULED_EVENTS_SERVICE_PROGRAM, SCHEDULED_EVENTS_SERVICE_PYTHON), so the integration target
runs this same suite against the installed program.
"""

import copy
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(REPO_ROOT, 'tests', 'simulator'))

from imds_simulator.json_lines import read_complete_lines  # noqa: E402  (path set just above)
from imds_simulator.process import SimulatorProcess, ends_with_this_process  # noqa: E402  (path set just above)

PROGRAM = os.environ.get('SCHEDULED_EVENTS_SERVICE_PROGRAM') or os.path.join(
    REPO_ROOT, 'roles', 'scheduled_events_service', 'files', 'scheduled-events-service')
PROGRAM_PYTHON = os.environ.get('SCHEDULED_EVENTS_SERVICE_PYTHON') or sys.executable
# Port 0: the kernel chooses at start; the session then keeps those ports.
WORLD = {
    'vms': [
        {'name': 'WestNO_0', 'listen': '127.0.0.1:0', 'group': 'westno'},
        {'name': 'WestNO_1', 'listen': '127.0.0.1:0', 'group': 'westno'},
    ],
    # Tests poll four times a second; throttling is switched on by the test about it.
    'throttle': {'enabled': False, 'per_second': 5},
    'first_call_delay_seconds': 0,
}


# The world with the ports the session's simulator was given (set at its start).
_BOUND_WORLD = {}


def endpoint_of(vm_index):
    """The Scheduled Events URL of VM ``vm_index`` of the session's simulator."""
    if not _BOUND_WORLD:
        raise RuntimeError('the simulator_process fixture has not started the simulator yet')
    return 'http://%s/metadata/scheduledevents' % _BOUND_WORLD['vms'][vm_index]['listen']


def unused_loopback_url(path='/metadata/scheduledevents'):
    """A URL where nothing listens: a port that was bound, then closed, and is not listened on by anyone here.

    Connections to it are refused; used only to test "IMDS unreachable", where
    a port someone else takes meanwhile would still not answer like IMDS.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    return 'http://127.0.0.1:%d%s' % (port, path)


@pytest.fixture(scope='session')
def simulator_process(tmp_path_factory):
    """A simulator of our own on ports the kernel chose, stopped at the end."""
    with SimulatorProcess(tmp_path_factory.mktemp('service-simulator'), config=WORLD,
                          extra_args=['--log-level', 'WARNING']) as process:
        bound = copy.deepcopy(WORLD)
        for vm in bound['vms']:
            vm['listen'] = process.ready['vms'][vm['name']]
        _BOUND_WORLD.clear()
        _BOUND_WORLD.update(bound)
        yield process.control
    _BOUND_WORLD.clear()


@pytest.fixture
def simulator(simulator_process):
    """The simulator reset to the two-VM world (on the same ports all session)."""
    simulator_process.reset(_BOUND_WORLD)
    return simulator_process


# A wait below returns as soon as its condition holds; its bound only keeps a
# broken daemon from hanging the suite. The bounds the tests give are what an
# idle machine needs with room to spare; two test runs at once on two cores
# (load average 20) made a daemon's poll, two hook processes and an approval
# take longer than 15 s, so every bound is stretched this many times.
BUSY_MACHINE_FACTOR = 4


def wait_until(predicate, timeout, interval=0.05, what='condition'):
    """Poll ``predicate`` until truthy (returned) or ``timeout`` seconds, times BUSY_MACHINE_FACTOR, pass
    (AssertionError)."""
    bound = timeout * BUSY_MACHINE_FACTOR
    deadline = time.monotonic() + bound
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError('%s not met within %.1f s' % (what, bound))
        time.sleep(interval)


def recording_hook(name, exit_code=0, sleep_seconds=0.0):
    """A hook that records its environment and input, then exits with ``exit_code``."""
    return '''#!%(python)s
import json, os, sys, time
started = time.time()
data = json.loads(sys.stdin.read() or 'null')
record = {'hook': %(name)r, 'pid': os.getpid(), 'started': started, 'stdin': data,
          'env': dict((k, v) for k, v in os.environ.items() if k.startswith('SE_'))}
def write(kind, **more):
    with open(os.environ['HOOK_RECORD_FILE'], 'a') as stream:
        stream.write(json.dumps(dict(record, kind=kind, **more)) + '\\n')
write('start')
time.sleep(%(sleep)r)
write('end', ended=time.time())
print('hook %(name)s says hello')
sys.exit(%(code)d)
''' % {'python': sys.executable, 'name': name, 'sleep': float(sleep_seconds), 'code': exit_code}


class Daemon(object):
    """One daemon under test: its configuration, hooks, process and records."""

    def __init__(self, base_dir, vm_index=0):
        self.base_dir = str(base_dir)
        self.conf_dir = os.path.join(self.base_dir, 'etc')
        self.hooks_dir = os.path.join(self.conf_dir, 'hooks')
        self.config_path = os.path.join(self.conf_dir, 'config.json')
        self.state_file = os.path.join(self.base_dir, 'state', 'state.json')
        self.record_file = os.path.join(self.base_dir, 'hook-records.jsonl')
        self.log_file = os.path.join(self.base_dir, 'daemon.log')
        self.process = None
        self.log_handle = None
        self.config = {
            'endpoint': endpoint_of(vm_index),
            'poll_interval': 0.25,
            'timeout': 2,
            'hooks_dir': self.hooks_dir,
            'hook_timeout': 20,
            'state_file': self.state_file,
            'log': {'format': 'json', 'level': 'debug'},
        }
        for phase in ('prepare', 'started', 'recover'):
            os.makedirs(os.path.join(self.hooks_dir, phase), mode=0o755, exist_ok=True)
        os.chmod(self.base_dir, 0o755)
        for directory in (self.conf_dir, self.hooks_dir):
            os.chmod(directory, 0o755)

    def add_hook(self, phase, name, content=None, mode=0o755, **hook_options):
        path = os.path.join(self.hooks_dir, phase, name)
        with open(path, 'w') as handle:
            handle.write(content if content is not None else recording_hook('%s/%s' % (phase, name), **hook_options))
        os.chmod(path, mode)
        return path

    def add_recording_hooks(self, names=('10-first', '20-second'), **hook_options):
        for phase in ('prepare', 'started', 'recover'):
            for name in names:
                self.add_hook(phase, name, **hook_options)

    def write_config(self, **overrides):
        self.config.update(overrides)
        with open(self.config_path, 'w') as handle:
            json.dump(self.config, handle, indent=1)
        os.chmod(self.config_path, 0o644)

    def command(self, *arguments):
        return [PROGRAM_PYTHON, PROGRAM, '--config', self.config_path] + list(arguments)

    def run_command(self, *arguments, **kwargs):
        return subprocess.run(self.command(*arguments), capture_output=True, text=True, timeout=kwargs.pop('timeout', 60),
                              env=self.environment(kwargs.pop('env', None)), check=False, **kwargs)

    def environment(self, extra=None):
        environment = dict(os.environ, HOOK_RECORD_FILE=self.record_file)
        environment.pop('JOURNAL_STREAM', None)
        environment.update(extra or {})
        return environment

    def start(self, *arguments, **kwargs):
        if not os.path.exists(self.config_path):
            self.write_config()
        self.log_handle = open(self.log_file, 'a')
        self.process = subprocess.Popen(self.command(*arguments), stdout=self.log_handle, stderr=subprocess.STDOUT,
                                        env=self.environment(kwargs.get('env')), preexec_fn=ends_with_this_process())
        wait_until(lambda: self.log_contains('polling ') or self.process.poll() is not None, 20, what='daemon start')
        assert self.process.poll() is None, 'daemon exited at start:\n' + self.log_text()
        return self.process

    def send_signal(self, signum):
        self.process.send_signal(signum)

    def stop(self, signum=signal.SIGTERM, timeout=30):
        """Stop the daemon; return its exit status."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signum)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
                raise AssertionError('daemon did not stop within %s s after signal %s' % (timeout, signum))
        status = self.process.returncode
        self.process = None
        self.log_handle.close()
        return status

    def kill(self):
        """SIGKILL the daemon, then its running hooks, as systemd does with the unit's cgroup."""
        self.process.kill()
        self.process.wait(timeout=10)
        self.process = None
        self.log_handle.close()
        self.kill_running_hooks()

    def kill_running_hooks(self):
        ended = set(record['pid'] for record in self.records('end'))
        for record in self.records():
            if record['pid'] not in ended:
                try:
                    os.killpg(record['pid'], signal.SIGKILL)
                except OSError:
                    pass

    def log_text(self):
        try:
            with open(self.log_file) as handle:
                return handle.read()
        except OSError:
            return ''

    def log_entries(self):
        entries = []
        for line in self.log_text().splitlines():
            try:
                entries.append(json.loads(line))
            except ValueError:
                continue
        return entries

    def log_contains(self, text):
        return text in self.log_text()

    def records(self, kind='start'):
        # A hook may be writing its record while the test looks.
        return [line for line in read_complete_lines(self.record_file) if kind is None or line['kind'] == kind]

    def hook_calls(self, event_id=None):
        """``phase/name`` of each hook start, in order, optionally for one event."""
        return [record['hook'] for record in self.records()
                if event_id is None or record['env']['SE_EVENT_ID'].lower() == event_id.lower()]

    def wait_for_hooks(self, event_id, expected, timeout=15):
        return wait_until(lambda: self.hook_calls(event_id)[:len(expected)] == expected and self.hook_calls(event_id),
                          timeout, what='hooks %s for %s (got %s)' % (expected, event_id, self.hook_calls(event_id)))

    def state(self):
        with open(self.state_file) as handle:
            return json.load(handle)


@pytest.fixture
def daemon_factory(tmp_path, simulator_process):
    """Daemons under test, killed at the end; their endpoint is the session simulator's, so it must run."""
    daemons = []

    def make(vm_index=0, name='daemon'):
        daemon = Daemon(tmp_path / name, vm_index)
        daemons.append(daemon)
        return daemon

    os.chmod(str(tmp_path), 0o755)
    yield make
    for daemon in daemons:
        if daemon.process is not None:
            daemon.kill()
        daemon.kill_running_hooks()


@pytest.fixture
def daemon(daemon_factory):
    return daemon_factory()


def approvals_of(control, event_id):
    return [entry for entry in control.approvals()
            if event_id.lower() in [approved.lower() for approved in entry['event_ids']]]
