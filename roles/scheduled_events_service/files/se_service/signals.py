# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Signals, relayed to a thread of their own, and kept until the service can act on them.

Imports nothing of the service, so the command line installs the relay
before it loads anything else: a SIGHUP (``systemctl reload``) that came
while the configuration and the state were still being read would otherwise
take Python's default action and end the process.
"""

import os
import signal
import threading

# What the service does on each: stop (SIGTERM, SIGINT) or reload (SIGHUP).
SERVICE_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _noop_handler(signum, frame):
    """Installed so the signal does not kill the process; SignalRelay does the work."""


class SignalRelay(object):
    """Runs the action of each signal received in a thread of its own.

    A Python signal handler runs in the main thread between two bytecodes,
    possibly while that very thread holds the lock of the Event the handler
    would set (inside ``wake.wait()`` or ``wake.clear()``, a non-reentrant
    lock): setting it there waits for ever, and SIGTERM never stops the
    daemon. So no Python code runs in the handler: the interpreter writes
    each signal's number to a pipe (``signal.set_wakeup_fd``), and this
    thread reads it and acts, taking locks like any other thread.

    A signal that comes before ``act_with`` has given its action is kept,
    and acted on then.
    """

    def __init__(self, signals=SERVICE_SIGNALS):
        self.signals = tuple(signals)
        self._actions = {}
        self._early = []
        self._lock = threading.Lock()
        self._read_end, self._write_end = os.pipe()
        os.set_blocking(self._write_end, False)
        self._thread = threading.Thread(target=self._run, name='signals')
        self._thread.daemon = True

    def install(self):
        """Install the handlers and start the thread (main thread only, like ``signal.signal``)."""
        for signum in self.signals:
            signal.signal(signum, _noop_handler)
        try:
            signal.set_wakeup_fd(self._write_end, warn_on_full_buffer=False)
        except TypeError:  # Python 3.6: no such keyword
            signal.set_wakeup_fd(self._write_end)
        self._thread.start()

    @property
    def kept(self):
        """The signals received before ``act_with``, in the order they first came."""
        with self._lock:
            return tuple(self._early)

    def act_with(self, actions):
        """Act from now on with ``actions`` ({signal: callable}), first on the signals kept until now; return those.

        Each kept signal is acted on once, in the order they first came: two
        early SIGHUPs are one reload of a configuration not yet read.
        """
        with self._lock:
            self._actions = dict(actions)
            early, self._early = self._early, []
        for signum in early:
            self._act(signum)
        return tuple(early)

    def _act(self, signum):
        action = self._actions.get(signum)
        if action is not None:
            action()

    def _run(self):
        while True:
            try:
                received = os.read(self._read_end, 64)
            except InterruptedError:
                continue
            if not received:
                return
            for signum in bytearray(received):
                with self._lock:
                    if not self._actions:
                        if signum not in self._early:
                            self._early.append(signum)
                        continue
                self._act(signum)
