"""Impact actions: the user's command run when an event hits a VM and ends.

Commands run without a shell, never block the simulator, and every run is
recorded with its argv and, once known, its exit code.

A VM's commands run one after another, in the order its impacts came: a
command that pauses what stands for the VM and the one that resumes it must
never overtake each other. Started at once, they could: each is its own
process, and on a busy machine a later one can be scheduled first, leaving
the VM paused for good after its impacts ended.
"""

import collections
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
    """Starts impact commands, one VM's after another, and collects their exit codes."""

    def __init__(self, records):
        self._records = records
        self._lock = threading.Lock()
        self._running = {}      # vm -> (process, record) of the command running for it
        self._waiting = collections.defaultdict(collections.deque)  # vm -> records to run next, oldest first

    def run(self, template, phase, vm, event, sim_now):
        """Run the command of ``phase`` for ``vm`` now, or once the VM's earlier commands have exited."""
        values = {'phase': phase, 'vm': vm, 'event_id': event.event_id, 'event_type': event.event_type,
                  'duration': str(event.duration_seconds)}
        record = {'phase': phase, 'vm': vm, 'event_id': event.event_id, 'event_type': event.event_type,
                  'argv': substitute(template, values), 'sim_time': format_iso(sim_now),
                  'real_time': format_iso(time.time()), 'pid': None, 'exit_code': None, 'error': None}
        self._records.append(record)
        with self._lock:
            if vm in self._running or self._waiting[vm]:
                self._waiting[vm].append(record)
                _LOG.info('impact %s for event %s on %s: waits for the VM\'s earlier impact command to exit',
                          phase, event.event_id, vm)
                return
            self._launch(vm, record)

    def _launch(self, vm, record):
        """Start ``record``'s command (called with the lock held)."""
        try:
            process = subprocess.Popen(record['argv'], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, close_fds=True)
        except OSError as exc:
            self._records.update(record, error='cannot run %s: %s' % (record['argv'][0], exc.strerror or exc))
            _LOG.warning('impact %s for %s/%s: %s', record['phase'], record['event_id'], vm, record['error'])
            return False
        self._records.update(record, pid=process.pid)
        self._running[vm] = (process, record)
        _LOG.info('impact %s for event %s on %s: pid %d %s', record['phase'], record['event_id'], vm, process.pid,
                  record['argv'])
        return True

    def reap(self):
        """Record exit codes of finished commands and start the next of their VMs; cheap enough for every tick."""
        with self._lock:
            for vm, (process, record) in list(self._running.items()):
                code = process.poll()
                if code is not None:
                    self._records.update(record, exit_code=code)
                    del self._running[vm]
            for vm, waiting in list(self._waiting.items()):
                while vm not in self._running and waiting:
                    self._launch(vm, waiting.popleft())
                if not waiting:
                    del self._waiting[vm]

    def drop_waiting(self, reason):
        """Never start the commands still waiting for their VM's earlier one; note ``reason`` in their records.

        On reset the commands already running finish (a pause stopped halfway
        could leave what stands for the VM half paused), but those of the old
        world that had not started must not run in the new one.
        """
        with self._lock:
            waiting, self._waiting = self._waiting, collections.defaultdict(collections.deque)
        for records in waiting.values():
            for record in records:
                self._records.update(record, error='not run: %s' % reason)

    def stop_all(self, grace_seconds=2.0):
        """Terminate commands still running and drop those waiting (simulator shutdown)."""
        self.drop_waiting('the simulator stopped first')
        with self._lock:
            running, self._running = list(self._running.values()), {}
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
