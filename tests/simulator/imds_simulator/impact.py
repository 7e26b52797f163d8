"""Impact actions: the user's command run when an event hits a VM and ends.

Commands run without a shell, never block the simulator, and every run is
recorded with its argv and, once known, its exit code.
"""

import logging
import subprocess
import threading
import time

from .clock import format_iso

__all__ = ['ImpactRunner', 'PLACEHOLDERS']

PLACEHOLDERS = ('{phase}', '{vm}', '{event_id}', '{event_type}', '{duration}')
_LOG = logging.getLogger('imds_simulator.impact')


def substitute(template, values):
    """``template`` with each placeholder replaced in every argument.

    Plain replacement rather than str.format so arguments may contain other
    braces (JSON, shell-free scripts) untouched.
    """
    argv = []
    for argument in template:
        for placeholder in PLACEHOLDERS:
            argument = argument.replace(placeholder, values[placeholder[1:-1]])
        argv.append(argument)
    return argv


class ImpactRunner:
    """Starts impact commands and collects their exit codes."""

    def __init__(self, records):
        self._records = records
        self._lock = threading.Lock()
        self._running = []

    def run(self, template, phase, vm, event, sim_now):
        values = {'phase': phase, 'vm': vm, 'event_id': event.event_id, 'event_type': event.event_type,
                  'duration': str(event.duration_seconds)}
        argv = substitute(template, values)
        record = {'phase': phase, 'vm': vm, 'event_id': event.event_id, 'event_type': event.event_type,
                  'argv': argv, 'sim_time': format_iso(sim_now), 'real_time': format_iso(time.time()),
                  'pid': None, 'exit_code': None, 'error': None}
        try:
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, close_fds=True)
        except OSError as exc:
            record['error'] = 'cannot run %s: %s' % (argv[0], exc.strerror or exc)
            _LOG.warning('impact %s for %s/%s: %s', phase, event.event_id, vm, record['error'])
            self._records.append(record)
            return
        record['pid'] = process.pid
        self._records.append(record)
        _LOG.info('impact %s for event %s on %s: pid %d %s', phase, event.event_id, vm, process.pid, argv)
        with self._lock:
            self._running.append((process, record))

    def reap(self):
        """Record exit codes of finished commands; cheap enough for every tick."""
        with self._lock:
            still_running = []
            for process, record in self._running:
                code = process.poll()
                if code is None:
                    still_running.append((process, record))
                else:
                    self._records.update(record, exit_code=code)
            self._running = still_running

    def stop_all(self, grace_seconds=2.0):
        """Terminate commands still running (simulator shutdown)."""
        with self._lock:
            running, self._running = self._running, []
        for process, record in running:
            if process.poll() is None:
                process.terminate()
        deadline = time.monotonic() + grace_seconds
        for process, record in running:
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
            self._records.update(record, exit_code=process.returncode)
