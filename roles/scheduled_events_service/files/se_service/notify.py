# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Telling the world: the JSON-lines event log and the webhook.

Each notable change (an event new, Started, gone, approved; a hook that
failed) becomes one record. The webhook is sent from its own thread with
retries, so a slow receiver never delays polling or hooks.
"""

import collections
import json
import os
import threading
import time

from . import VERSION

SOURCE = 'azure_maintenance.scheduled_events.service'
# Records waiting for the webhook; beyond this the oldest are dropped (logged)
# rather than letting memory grow while the receiver is down.
QUEUE_LIMIT = 1000


def make_record(kind, resource_name, event=None, **detail):
    """One notification: what happened (``kind``), to which event, on which VM."""
    record = {'source': SOURCE, 'kind': kind, 'time': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
              'resource_name': resource_name}
    if event is not None:
        record['event_id'] = event.get('event_id')
        record['event'] = event
    record.update(detail)
    return record


class EventLog(object):
    """Appends one JSON object per line; reopened per write so logrotate needs no signal."""

    def __init__(self, path):
        self.path = path

    def write(self, record):
        directory = os.path.dirname(self.path)
        if directory and not os.path.isdir(directory):
            os.makedirs(directory, mode=0o750)
        descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
        with os.fdopen(descriptor, 'a') as stream:
            stream.write(json.dumps(record, sort_keys=True, default=str) + '\n')


class WebhookNotifier(object):
    """POSTs records as JSON to ``url`` with ``headers``, retrying with backoff."""

    def __init__(self, url, headers, retries, timeout, logger, backoff_base=1.0):
        self.url = url
        self.headers = dict(headers or {})
        self.retries = retries
        self.timeout = timeout
        self.logger = logger
        self.backoff_base = backoff_base
        self._queue = collections.deque()
        self._condition = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name='webhook')
        self._thread.daemon = True
        self.sent = 0
        self.failed = 0

    def start(self):
        self._thread.start()

    def submit(self, record):
        with self._condition:
            if len(self._queue) >= QUEUE_LIMIT:
                dropped = self._queue.popleft()
                self.logger.warning('webhook queue full: dropped the %s notification of %s', dropped.get('kind'),
                                    dropped.get('time'))
            self._queue.append(record)
            self._condition.notify()

    def stop(self, drain_seconds=5.0):
        """Stop after trying to send what is queued for at most ``drain_seconds``."""
        deadline = time.monotonic() + drain_seconds
        with self._condition:
            while self._queue and time.monotonic() < deadline:
                self._condition.wait(0.1)
            self._stopping = True
            self._condition.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout=max(0.1, deadline - time.monotonic()) + self.timeout)

    def _run(self):
        while True:
            with self._condition:
                while not self._queue and not self._stopping:
                    self._condition.wait()
                if self._stopping:
                    return
                record = self._queue[0]
            self._deliver(record)
            with self._condition:
                if self._queue and self._queue[0] is record:
                    self._queue.popleft()
                self._condition.notify_all()

    def _post(self, body):
        import urllib.request  # on use: the idle service is meant to stay small
        headers = {'Content-Type': 'application/json', 'User-Agent': 'scheduled-events-service/%s' % VERSION}
        headers.update(self.headers)
        request = urllib.request.Request(self.url, data=body, headers=headers, method='POST')
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            return response.status

    def _deliver(self, record):
        import urllib.error
        body = json.dumps(record, sort_keys=True, default=str).encode('utf-8')
        for attempt in range(self.retries + 1):
            try:
                self._post(body)
                self.sent += 1
                return
            except urllib.error.HTTPError as exc:
                error = 'HTTP %d' % exc.code
            except (urllib.error.URLError, OSError, ValueError) as exc:
                error = str(getattr(exc, 'reason', exc))
            if attempt < self.retries:
                with self._condition:
                    if self._stopping:
                        break
                    self._condition.wait(self.backoff_base * (2 ** attempt))
        self.failed += 1
        self.logger.warning('webhook %s did not accept the %s notification after %d attempt(s): %s',
                            self.url, record.get('kind'), self.retries + 1, error,
                            extra={'fields': {'webhook_error': error, 'kind': record.get('kind')}})
