# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running the real consumers against a real simulator process, for the fault matrix and its benchmark.

Everything binds port 0 and lives in the directory it is given. Used by
tests/faults/ and tests/benchmarks/bench_faults.py; no pytest needed.
"""

import datetime
import json
import os
import signal
import subprocess
import sys
import time

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
SIMULATOR_DIR = os.path.join(REPO_ROOT, 'tests', 'simulator')
if SIMULATOR_DIR not in sys.path:
    sys.path.insert(0, SIMULATOR_DIR)

from imds_simulator.json_lines import read_complete_lines  # noqa: E402  (path set just above)
from imds_simulator.process import SimulatorProcess, ends_with_this_process  # noqa: E402  (path set just above)

SERVICE_PROGRAM = os.path.join(REPO_ROOT, 'roles', 'scheduled_events_service', 'files', 'scheduled-events-service')
MODULES_DIR = os.path.join(REPO_ROOT, 'plugins', 'modules')
# Every wait of the harness ends within this many seconds or fails.
WAIT_LIMIT_SECONDS = 30.0


def simulator(work_dir, vm_names=('vm0', 'vm1'), **world):
    """A SimulatorProcess (use it with ``with``) of VMs in one availability set, throttle off, no first-call delay."""
    config = {'vms': [{'name': name, 'listen': '127.0.0.1:0', 'group': 'avset', 'platformUpdateDomain': '0'}
                      for name in vm_names],
              'throttle': {'enabled': False, 'per_second': 5}, 'first_call_delay_seconds': 0}
    config.update(world)
    return SimulatorProcess(os.path.join(str(work_dir), 'simulator'), config=config)


def epoch_of(iso_text):
    """Epoch seconds of the simulator's ISO timestamps (milliseconds, UTC)."""
    moment = datetime.datetime.strptime(iso_text, '%Y-%m-%dT%H:%M:%S.%fZ')
    return moment.replace(tzinfo=datetime.timezone.utc).timestamp()


def requests_of(sim, vm, method=None, path='/metadata/scheduledevents'):
    """The simulator's request log for ``vm``: ``[(epoch, method, status)]``."""
    return [(epoch_of(entry['real_time']), entry['method'], entry['status'])
            for entry in sim.control.log(vm=vm)
            if entry['path'] == path and (method is None or entry['method'] == method)]


def longest_gap(times):
    return max((later - earlier for earlier, later in zip(times, times[1:])), default=0.0)


_RECORDING_HOOK = '''#!%(python)s
import json, os, sys, time
data = json.loads(sys.stdin.read() or 'null')
with open(%(record)r, 'a') as stream:
    stream.write(json.dumps({'hook': %(name)r, 'at': time.time(), 'event_id': os.environ.get('SE_EVENT_ID'),
                             'affects': data.get('event', {}).get('affects_this_vm') if isinstance(data, dict) else None})
                 + '\\n')
'''


class Service(object):
    """The hook daemon under test, in ``work_dir``, with one recording hook per phase, on VM ``vm`` of ``sim``."""

    def __init__(self, work_dir, sim, vm='vm0', **config):
        endpoint = sim.endpoint(vm)
        self.control = sim.control
        self.dir = os.path.join(str(work_dir), 'service')
        self.hooks_dir = os.path.join(self.dir, 'hooks')
        self.record_file = os.path.join(self.dir, 'hooks.jsonl')
        self.config_path = os.path.join(self.dir, 'config.json')
        self.log_path = os.path.join(self.dir, 'service.log')
        self.state_file = os.path.join(self.dir, 'state', 'state.json')
        self.process = None
        self._log = None
        os.makedirs(self.dir)
        os.chmod(self.dir, 0o755)
        os.chmod(os.path.dirname(self.dir), 0o755)
        for phase in ('prepare', 'started', 'recover'):
            os.makedirs(os.path.join(self.hooks_dir, phase), mode=0o755)
            path = os.path.join(self.hooks_dir, phase, '10-record')
            with open(path, 'w') as handle:
                handle.write(_RECORDING_HOOK % {'python': sys.executable, 'record': self.record_file, 'name': phase})
            os.chmod(path, 0o755)
        os.chmod(self.hooks_dir, 0o755)
        self.config = {'endpoint': endpoint, 'poll_interval': 0.25, 'timeout': 2, 'hooks_dir': self.hooks_dir,
                       'hook_timeout': 20, 'state_file': self.state_file, 'log': {'format': 'json', 'level': 'info'},
                       'approval': {'default_action': 'approve_after_prepare'}}
        self.config.update(config)
        with open(self.config_path, 'w') as handle:
            json.dump(self.config, handle)
        os.chmod(self.config_path, 0o644)

    def start(self):
        self._log = open(self.log_path, 'a')
        self.process = subprocess.Popen([sys.executable, SERVICE_PROGRAM, '--config', self.config_path],
                                        stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        preexec_fn=ends_with_this_process())
        self.wait_for(lambda: 'polling ' in self.log_text() or self.process.poll() is not None)
        assert self.process.poll() is None, 'the service exited at start:\n' + self.log_text()
        return self

    def wait_for(self, predicate):
        """``predicate()`` once truthy (returned), polled for at most WAIT_LIMIT_SECONDS (else TimeoutError)."""
        return self.control.wait_for(lambda dummy: predicate(), timeout=WAIT_LIMIT_SECONDS)

    def stop(self, signum=signal.SIGTERM, timeout=WAIT_LIMIT_SECONDS):
        """Stop the service; return (exit status, seconds it took)."""
        if self.process is None:
            return None, 0.0
        started = time.monotonic()
        self.process.send_signal(signum)
        try:
            status = self.process.wait(timeout=timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(timeout=10)
            self.process = None
            self._log.close()
        return status, time.monotonic() - started

    def log_text(self):
        try:
            with open(self.log_path) as handle:
                return handle.read()
        except OSError:
            return ''

    def hook_runs(self, phase=None):
        # A hook may be writing its record while the test looks.
        return [run for run in read_complete_lines(self.record_file) if phase is None or run['hook'] == phase]

    def state(self):
        with open(self.state_file) as handle:
            return json.load(handle)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        if self.process is not None:
            self.stop()


def run_module(work_dir, module, args, timeout=300):
    """Run a module of the collection as Ansible would (its file, an args file); return (result dict, seconds)."""
    collections = os.path.join(str(work_dir), 'collections')
    namespace = os.path.join(collections, 'ansible_collections', 'azure_maintenance')
    if not os.path.isdir(namespace):
        os.makedirs(namespace)
        os.symlink(REPO_ROOT, os.path.join(namespace, 'scheduled_events'))
    args_path = os.path.join(str(work_dir), '%s-args.json' % module)
    with open(args_path, 'w') as handle:
        json.dump({'ANSIBLE_MODULE_ARGS': args}, handle)
    environment = dict(os.environ, PYTHONPATH=collections)
    started = time.monotonic()
    completed = subprocess.run([sys.executable, os.path.join(MODULES_DIR, module + '.py'), args_path],
                               capture_output=True, text=True, timeout=timeout, env=environment, check=False,
                               stdin=subprocess.DEVNULL)
    seconds = time.monotonic() - started
    try:
        return json.loads(completed.stdout), seconds
    except ValueError:
        raise AssertionError('module %s printed no JSON (exit %d): %s %s'
                             % (module, completed.returncode, completed.stdout, completed.stderr))
