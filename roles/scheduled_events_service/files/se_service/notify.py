# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Telling the world: the JSON-lines event log and the webhook.

Each notable change (an event new, Started, gone, approved; a hook that
failed) becomes one record. The webhook is sent from its own thread with
retries, so a slow receiver never delays polling or hooks.

The webhook's headers usually carry a secret (``Authorization``), so the
client goes nowhere it was not told to: it ignores proxy variables unless
``proxy`` names one, follows no redirect unless ``follow_redirects``, and
even then never sends the configured headers to another origin.
"""

import collections
import json
import os
import threading
import time
from urllib.parse import urljoin, urlsplit

from . import VERSION

SOURCE = 'azure_maintenance.scheduled_events.service'
# Records waiting for the webhook; beyond this the oldest are dropped (logged)
# rather than letting memory grow while the receiver is down.
QUEUE_LIMIT = 1000
REDIRECT_CODES = (301, 302, 303, 307, 308)
# Redirects followed for one delivery, when following is allowed at all.
REDIRECT_LIMIT = 5
_DEFAULT_PORTS = {'http': 80, 'https': 443}


def origin_of(url):
    """``(scheme, host, port)`` of ``url``: what must match for credentials to go along."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or '').lower(), parts.port or _DEFAULT_PORTS.get(scheme)


def shown_url(url):
    """``url`` as logs show it: scheme, host and port only, as many receivers carry a token in the path."""
    parts = urlsplit(url)
    return '%s://%s/...' % (parts.scheme, parts.netloc.rpartition('@')[2]) if parts.netloc else '(webhook URL)'


def redirect_target(url, status, location, original_url, hops):
    """Where a redirect answer leads, and whether the configured headers may go there.

    Returns ``(next_url, keep_headers)``; raises ValueError when the redirect
    must not be followed (not http(s), too many hops).
    """
    if status not in REDIRECT_CODES or not location:
        raise ValueError('HTTP %d without a usable Location' % status)
    if hops >= REDIRECT_LIMIT:
        raise ValueError('more than %d redirects' % REDIRECT_LIMIT)
    next_url = urljoin(url, location)
    if urlsplit(next_url).scheme.lower() not in ('http', 'https'):
        raise ValueError('redirect to a non-HTTP URL %s' % next_url)
    return next_url, origin_of(next_url) == origin_of(original_url)


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
    """POSTs records as JSON to ``url`` with ``headers``, retrying with backoff.

    ``follow_redirects`` (off by default) re-POSTs to the Location of a
    redirect, with the configured headers only while it stays on the URL's
    origin; ``proxy`` (none by default) is the only proxy ever used.
    """

    def __init__(self, url, headers, retries, timeout, logger, backoff_base=1.0, follow_redirects=False, proxy=None):
        self.url = url
        self.headers = dict(headers or {})
        self.retries = retries
        self.timeout = timeout
        self.logger = logger
        self.backoff_base = backoff_base
        self.follow_redirects = follow_redirects
        self.proxy = proxy
        self._opener = None
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

    def _get_opener(self):
        import urllib.request  # on use: the idle service is meant to stay small

        class _NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args):
                return None  # the 3xx reaches _post as an HTTPError, decided there

        if self._opener is None:
            proxies = {'http': self.proxy, 'https': self.proxy} if self.proxy else {}
            self._opener = urllib.request.build_opener(urllib.request.ProxyHandler(proxies), _NoRedirect)
        return self._opener

    def _post(self, body):
        import urllib.error
        import urllib.request
        url, keep_headers, hops = self.url, True, 0
        while True:
            headers = {'Content-Type': 'application/json', 'User-Agent': 'scheduled-events-service/%s' % VERSION}
            if keep_headers:
                headers.update(self.headers)
            request = urllib.request.Request(url, data=body, headers=headers, method='POST')
            try:
                with self._get_opener().open(request, timeout=self.timeout) as response:
                    return response.status
            except urllib.error.HTTPError as exc:
                if exc.code not in REDIRECT_CODES:
                    raise
                exc.close()
                if not self.follow_redirects:
                    raise ValueError('HTTP %d redirect to %s not followed (webhook.follow_redirects is false)'
                                     % (exc.code, exc.headers.get('Location')))
                url, same_origin = redirect_target(url, exc.code, exc.headers.get('Location'), self.url, hops)
                keep_headers = keep_headers and same_origin
                hops += 1

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
                            shown_url(self.url), record.get('kind'), self.retries + 1, error,
                            extra={'fields': {'webhook_error': error, 'kind': record.get('kind')}})
