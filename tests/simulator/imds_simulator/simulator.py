"""The running simulator: world, clock, logs, VM listeners, control listener, tick.

Tests that want the simulator in-process create a Simulator, ``start()`` it
and ``stop()`` it; the command line does the same.
"""

import logging
import threading
import time

from .clock import SimClock
from .config import ConfigError, parse_listen, validate_config, validate_vm
from .control_server import ControlRequestHandler
from .faults import FaultRules
from .http_base import open_server
from .imds_server import ImdsListeners
from .impact import ImpactRunner
from .logs import SequencedLog
from .world import World

__all__ = ['Simulator', 'TICK_SECONDS']

# Short enough that a poller at one request per second sees every change.
TICK_SECONDS = 0.05
_LOG = logging.getLogger('imds_simulator')


class Simulator:
    """Everything one simulator process runs."""

    def __init__(self, config, control_listen='127.0.0.1:18079', monotonic=time.monotonic):
        """``monotonic``: the real-time clock that the throttle's one-second window and the first-call delay count,
        in seconds; a test passes one it moves itself."""
        self.control_address = parse_listen(control_listen, '--control')
        self.request_log = SequencedLog()
        self.approval_log = SequencedLog()
        self.impact_log = SequencedLog()
        self.faults = FaultRules()
        self.impacts = ImpactRunner(self.impact_log)
        self.clock = SimClock()
        self.listeners = ImdsListeners(self)
        checked = validate_config(config)
        self.listeners.bind_any_ports(checked['vms'])
        self.world = World(checked, self.clock, self.impacts, self.faults, monotonic=monotonic)
        self._control = None
        self._stopping = threading.Event()
        self._ticker = None

    @property
    def control_url(self):
        host, port = self.control_address
        return 'http://%s:%d' % ('[%s]' % host if ':' in host else host, port)

    def start(self):
        """Open every listener and start the tick; OSError (closed again) if a port is taken."""
        self.listeners.open_missing(self.world.addresses())
        try:
            self._control = open_server(self.control_address, ControlRequestHandler, self)
        except OSError as exc:
            self.listeners.close_all()
            raise OSError(exc.errno, 'cannot listen on %s for the control API: %s (is another simulator running?)'
                          % (self.control_url, exc.strerror or exc)) from None
        # With port 0 the kernel chose: from now on the real port is the address.
        self.control_address = self._control.server_address[:2]
        self._ticker = threading.Thread(target=self._tick, name='imds-simulator-tick', daemon=True)
        self._ticker.start()
        _LOG.info('control API at %s; VMs: %s', self.control_url,
                  ', '.join('%s=%s' % (vm['name'], vm['listen']) for vm in self.world.config['vms']))

    def _tick(self):
        while not self._stopping.wait(TICK_SECONDS):
            try:
                self.world.refresh()
            except Exception:  # pylint: disable=broad-except
                # A bug in one refresh must not freeze the clock for the rest
                # of a test run; it is logged with its traceback.
                _LOG.exception('refresh failed')

    def stop(self):
        self._stopping.set()
        if self._control is not None:
            self._control.close_all()
            self._control = None
        self.listeners.close_all()
        if self._ticker is not None:
            self._ticker.join(timeout=5)
        self.impacts.stop_all()

    def reset(self, config=None):
        """Start over from ``config`` (or the current config); returns the state."""
        checked = validate_config(config) if config is not None else self.world.config
        with self.world.lock:
            self.listeners.bind_any_ports(checked['vms'])
            addresses = {parse_listen(vm['listen']) for vm in checked['vms']}
            self.listeners.open_missing(addresses)
            self.faults.clear()
            self.request_log.clear()
            self.approval_log.clear()
            self.impacts.drop_waiting('the simulator was reset first')
            self.impact_log.clear()
            try:
                self.world.apply_config(checked)
            finally:
                self.listeners.close_except(self.world.addresses())
            return self.world.state()

    def add_vm(self, request):
        spec = validate_vm(request, 'vm')
        with self.world.lock:
            if spec['name'] in self.world.vms:
                raise ConfigError('a VM named %r exists already' % spec['name'])
            address = parse_listen(spec['listen'])
            if address in self.world.addresses():
                raise ConfigError('listen %s is used by another VM' % spec['listen'])
            self.listeners.bind_any_ports([spec])
            self.listeners.open_missing({parse_listen(spec['listen'])})
            try:
                return self.world.add_vm(spec)
            except ConfigError:
                self.listeners.close_except(self.world.addresses())
                raise
