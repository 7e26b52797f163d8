"""Run the simulator as a separate process on ports the kernel chooses, for tests and tools.

    from imds_simulator.process import SimulatorProcess
    with SimulatorProcess(tmp_path, config={'vms': [{'name': 'vm0', 'listen': '127.0.0.1:0'}]}) as sim:
        sim.control.create_event('Freeze', ['vm0'])
        url = sim.endpoint('vm0')

Every VM whose ``listen`` port is 0 (and the control API, unless
``control`` says otherwise) gets a free port when it is bound, so two test
runs on one machine never meet. Everything the process writes (pid file,
log, ready file, config) stays in ``work_dir``. The simulator runs for the
process that started it (``--stop-with``): when that process is killed
before it can stop the simulator, the simulator stops itself.

Programs a test starts in the foreground of its own process (a daemon,
HAProxy, ansible-rulebook, ansible-playbook) get the same promise from
``ends_with_this_process``:

    subprocess.Popen(argv, preexec_fn=ends_with_this_process())

and those that cannot bind port 0 themselves (HAProxy, the daemon's metrics
listener, an Event Grid receiver) get their port from ``unused_port``.
"""

import ctypes
import errno
import json
import os
import random
import signal
import socket
import subprocess
import sys

from .cli import read_ready_file
from .control_client import SimulatorControl

__all__ = ['SimulatorProcess', 'SimulatorStartError', 'SCRIPT', 'ends_with_this_process', 'unused_port',
           'ports_below_ephemeral_range', 'EPHEMERAL_RANGE_FILE']

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'imds-simulator')
_START_TIMEOUT_SECONDS = 60
_STOP_TIMEOUT_SECONDS = 30
# prctl(2): the signal a process gets when the thread that started it ends.
_PR_SET_PDEATHSIG = 1
# Where Linux says which local ports it hands out by itself.
EPHEMERAL_RANGE_FILE = '/proc/sys/net/ipv4/ip_local_port_range'
_UNUSED_PORT_TRIES = 50


def ends_with_this_process():
    """A ``preexec_fn`` for ``subprocess.Popen``: the program it starts is killed (SIGKILL) once the thread that
    started it has ended, however it ended; None (nothing to do) off Linux.

    A test that is killed (SIGKILL, a crashed pytest-xdist worker, a runner's
    time-out) cannot stop what it started: a daemon would poll, HAProxy and
    ansible-rulebook serve, a playbook run on, long after the run that
    wanted them. The simulator watches its owner itself (``--stop-with``);
    the programs under test run as users run them, with no option of the
    tests' own, so the kernel is asked to end them (PR_SET_PDEATHSIG, which
    outlives exec). It follows the starting *thread*, so start them from a
    thread that lives as long as they should: the test's own, or one that
    waits for them.
    """
    if not sys.platform.startswith('linux'):
        return None
    # Looked up here, in the starting process: the child does as little as it can between fork and exec.
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    starter = os.getpid()

    def ask_to_end_with_the_starter():
        if prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), 'prctl(PR_SET_PDEATHSIG) failed')
        # The starter ended before the request was made: no signal would come.
        if os.getppid() != starter:
            os._exit(1)

    return ask_to_end_with_the_starter


def ports_below_ephemeral_range(range_text):
    """The ports ``unused_port`` picks from, given the text of ip_local_port_range ("32768\t60999"): the upper
    half of those below the range (16384-32767 there); none when the range starts too low to leave room, or the
    text is not two port numbers.
    """
    try:
        low, high = (int(field) for field in range_text.split())
    except ValueError:
        return range(0)
    if not 1 <= low <= high <= 65535:
        return range(0)
    return range(max(1024, low // 2), low)


def unused_port(host='127.0.0.1', range_file=EPHEMERAL_RANGE_FILE, rng=None):
    """A port on ``host`` that nothing holds now, for a program that cannot bind port 0 itself.

    It is taken at random below the kernel's ephemeral range: a port the
    kernel picks (a bind to port 0, or the client end of every outgoing
    connection) comes from that range, and on a machine busy with tests one
    picked there was soon some connection's local port, before the program
    meant to listen on it had started (the service role's target then saw
    its metrics port "already in use by another program"). Below the range
    only another pick like this one can take it, so a caller still retries
    on EADDRINUSE. Where the range leaves no room (or off Linux), the kernel
    picks, as a bind to port 0 does.
    """
    try:
        with open(range_file, encoding='ascii') as handle:
            candidates = ports_below_ephemeral_range(handle.read())
    except OSError:
        candidates = range(0)
    rng = rng or random.SystemRandom()
    family = socket.AF_INET6 if ':' in host else socket.AF_INET
    for dummy in range(_UNUSED_PORT_TRIES if candidates else 0):
        port = rng.choice(candidates)
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            try:
                probe.bind((host, port))
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    raise
                continue
            return port
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


class SimulatorStartError(RuntimeError):
    """The simulator did not come up; the message holds the end of its log."""


class SimulatorProcess:
    """One background simulator in ``work_dir``; a context manager that stops it on exit."""

    def __init__(self, work_dir, config=None, control='127.0.0.1:0', extra_args=(), name='simulator',
                 python=sys.executable):
        self.work_dir = os.path.abspath(str(work_dir))
        self.config = config
        self.control_listen = control
        self.extra_args = list(extra_args)
        self.python = python
        self.pidfile = os.path.join(self.work_dir, name + '.pid')
        self.ready_file = os.path.join(self.work_dir, name + '.ready.json')
        self.log_file = os.path.join(self.work_dir, name + '.log')
        self.config_file = os.path.join(self.work_dir, name + '-config.json')
        self.ready = None
        self.control = None

    def start(self):
        os.makedirs(self.work_dir, exist_ok=True)
        command = [self.python, SCRIPT, '--background', '--pidfile', self.pidfile, '--ready-file', self.ready_file,
                   '--log-file', self.log_file, '--control', self.control_listen, '--stop-with', str(os.getpid())]
        if self.config is not None:
            with open(self.config_file, 'w', encoding='utf-8') as handle:
                json.dump(self.config, handle)
            command += ['--config', self.config_file]
        result = subprocess.run(command + self.extra_args, capture_output=True, text=True, check=False,
                                timeout=_START_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL)
        self.ready = read_ready_file(self.ready_file)
        if result.returncode != 0 or self.ready is None:
            raise SimulatorStartError('the simulator did not start (exit %d): %s%s'
                                      % (result.returncode, result.stdout, result.stderr))
        self.control = SimulatorControl(self.control_url)
        self.control.wait_until_up(timeout=20)
        return self

    @property
    def pid(self):
        return self.ready['pid']

    @property
    def control_url(self):
        return 'http://' + self.ready['control']

    @property
    def arm_url(self):
        """Base URL of the ARM facade (started with ``extra_args=['--arm', '127.0.0.1:0']``)."""
        if 'arm' not in self.ready:
            raise KeyError('this simulator serves no ARM facade; start it with extra_args=["--arm", "127.0.0.1:0"]')
        return 'http://' + self.ready['arm']

    def address(self, vm_name):
        """``HOST:PORT`` of a VM; after a reset with new listens, ask again (it reads the simulator's state)."""
        for vm in self.control.state()['vms']:
            if vm['name'] == vm_name:
                return vm['listen']
        raise KeyError('the simulator has no VM named %r' % vm_name)

    def base_url(self, vm_name):
        return 'http://' + self.address(vm_name)

    def endpoint(self, vm_name):
        return self.base_url(vm_name) + '/metadata/scheduledevents'

    def stop(self):
        if self.ready is None:
            return
        subprocess.run([self.python, SCRIPT, '--stop', '--pidfile', self.pidfile], capture_output=True,
                       check=False, timeout=_STOP_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL)
        self.ready = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()
