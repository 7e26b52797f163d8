"""Fixtures: an in-process simulator on free loopback ports, and raw IMDS calls."""

import contextlib
import http.client
import json
import os
import socket
import sys
import time

import pytest

SIMULATOR_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(SIMULATOR_DIR, 'imds-simulator')
if SIMULATOR_DIR not in sys.path:
    sys.path.insert(0, SIMULATOR_DIR)

from imds_simulator.clock import ALL_BUT_STOPPED  # noqa: E402
from imds_simulator.control_client import SimulatorControl  # noqa: E402
from imds_simulator.simulator import Simulator  # noqa: E402

API = '2020-07-01'
SE_PATH = '/metadata/scheduledevents'


@contextlib.contextmanager
def closed_port(host='127.0.0.1'):
    """A port on ``host`` that refuses connections for as long as the block runs.

    The socket is bound (the kernel picks the port) and never listens, so a
    connection is refused and no other program can take the port meanwhile.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind((host, 0))
        yield holder.getsockname()[1]


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def json(self):
        return json.loads(self.body.decode('utf-8'))


def call(address, method='GET', path=SE_PATH, api_version=API, headers=None, body=None, query=None,
         connection=None):
    """One raw HTTP request to ``address`` ((host, port)); ``Metadata: true`` unless headers say otherwise."""
    target = path
    if query is not None:
        target += '?' + query
    elif api_version is not None:
        target += '?api-version=' + api_version
    sent_headers = {'Metadata': 'true'} if headers is None else dict(headers)
    if body is not None and not isinstance(body, bytes):
        body = json.dumps(body).encode('utf-8')
    own = connection is None
    if own:
        connection = http.client.HTTPConnection(*address, timeout=10)
    try:
        connection.request(method, target, body=body, headers=sent_headers)
        response = connection.getresponse()
        return Response(response.status, response.headers, response.read())
    finally:
        if own:
            connection.close()


class Sim:
    """A running in-process simulator plus handy accessors for tests."""

    def __init__(self, simulator):
        self.simulator = simulator
        self.world = simulator.world
        self.control = SimulatorControl(simulator.control_url)

    def address(self, vm):
        return self.world.vms[vm].address

    def get(self, vm, **kwargs):
        return call(self.address(vm), **kwargs)

    def document(self, vm, api_version=API):
        response = self.get(vm, api_version=api_version)
        assert response.status == 200, response.body
        return response.json

    def approve(self, vm, *event_ids, api_version=API):
        body = {'StartRequests': [{'EventId': event_id} for event_id in event_ids]}
        return self.get(vm, method='POST', body=body, api_version=api_version)


def world_config(vm_count=2, throttle=False, **extra):
    """A config of ``vm_count`` VMs in one group on ports the kernel chooses, throttle off unless asked.

    The clock all but stops between the test's moves (``ALL_BUT_STOPPED``)
    unless ``speed`` is given. Tests move the clock themselves and often stop
    it just short of a moment (a NotBefore, an impact's end) to see that
    nothing happened yet: at speed 1 the real time the test then takes counts
    too, and on a loaded machine (two make test at once) starting the impact
    recorder alone took over half a second, so 6.5 s of a 7 s impact became 7
    and the test saw the impact end. A test that needs the clock to run by
    itself asks for its own speed.
    """
    vms = [{'name': 'vm%d' % index, 'listen': '127.0.0.1:0', 'group': 'avset',
            'platformUpdateDomain': str(index), 'platformFaultDomain': str(index % 2)}
           for index in range(vm_count)]
    config = {'vms': vms, 'throttle': {'enabled': throttle, 'per_second': 5}, 'speed': ALL_BUT_STOPPED}
    config.update(extra)
    return config


class StoppedRealTime:
    """Stands in for ``time.monotonic`` and moves only when the test moves it.

    The throttle's one-second window and the first-call delay count real time,
    so a test that relied on the real clock held only while the machine
    answered its requests quickly enough: with both cores busy, requests meant
    to fall in one second can spread over more. With this clock the test says
    how much real time passed.
    """

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


@contextlib.contextmanager
def running(config, monotonic=time.monotonic):
    simulator = Simulator(config, '127.0.0.1:0', monotonic=monotonic)
    simulator.start()
    try:
        yield Sim(simulator)
    finally:
        simulator.stop()


@pytest.fixture
def sim():
    with running(world_config()) as started:
        yield started


@pytest.fixture
def make_sim():
    """Start simulators with custom configs (and ``monotonic=`` a real-time clock); all are stopped after the test."""
    with contextlib.ExitStack() as stack:
        yield lambda config, **options: stack.enter_context(running(config, **options))
