# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures for the tests of the Scheduled Events core.

Time never passes for real: ``fake_clock`` stands in for ``monotonic`` and
``sleep``. The only network is ``loopback_imds``, an HTTP/1.1 server on
127.0.0.1 with an ephemeral port, whose answers each test scripts and whose
received requests each test inspects.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_transport import HttpResponse

FIXTURES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures')

# Upper bound for anything the loopback server waits on, so a broken test
# fails instead of hanging.
_SERVER_WAIT_LIMIT_SECONDS = 2.0


@pytest.fixture
def fixture_bytes():
    """Read a file of fixtures/ as bytes."""
    def read(name):
        with open(os.path.join(FIXTURES_DIR, name), 'rb') as handle:
            return handle.read()
    return read


@pytest.fixture
def fixture_json(fixture_bytes):
    """Read a JSON file of fixtures/."""
    def load(name):
        return json.loads(fixture_bytes(name).decode('utf-8'))
    return load


class FakeClock(object):
    """A monotonic clock that only moves when slept on or advanced."""

    def __init__(self, start=1000.0):
        self.now = start
        self.sleeps = []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        assert seconds >= 0, 'negative sleep %r' % seconds
        self.sleeps.append(seconds)
        self.now += seconds

    def advance(self, seconds):
        self.now += seconds


@pytest.fixture
def fake_clock():
    return FakeClock()


class ScriptedTransport(object):
    """A transport that plays a script of outcomes and records every call.

    Each outcome is an HttpResponse (returned), an exception instance
    (raised) or a callable taking the call record and returning either.
    Running out of script fails the test, which keeps every retry loop
    bounded even when the code under test is wrong.
    """

    def __init__(self, outcomes, clock=None, seconds_per_request=0.0):
        self.outcomes = list(outcomes)
        self.calls = []
        self.clock = clock
        self.seconds_per_request = seconds_per_request
        self.closed = 0

    def request(self, method, url, headers, body=None, connect_timeout=5.0, read_timeout=10.0):
        call = {'method': method, 'url': url, 'headers': dict(headers), 'body': body,
                'connect_timeout': connect_timeout, 'read_timeout': read_timeout}
        self.calls.append(call)
        if self.clock is not None:
            self.clock.advance(self.seconds_per_request)
        if not self.outcomes:
            raise AssertionError('transport script exhausted after %d calls' % len(self.calls))
        outcome = self.outcomes.pop(0)
        if callable(outcome) and not isinstance(outcome, BaseException):
            outcome = outcome(call)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def close(self):
        self.closed += 1


def json_response(status, payload, headers=None):
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode('utf-8')
    return HttpResponse(status, dict(headers or {}), body)


@pytest.fixture
def scripted_transport():
    """Factory: ``scripted_transport(outcomes, clock=None, seconds_per_request=0.0)``."""
    return ScriptedTransport


@pytest.fixture
def response():
    """Factory: ``response(status, payload_or_bytes, headers=None)`` -> HttpResponse."""
    return json_response


class Reply(object):
    """One scripted answer of the loopback server.

    ``close_after``: close the connection after answering without saying so
    (no ``Connection: close``), like a server whose keep-alive expired.
    ``drop``: close the connection without answering at all.
    ``delay``: seconds to wait before answering.
    """

    def __init__(self, status=200, payload=None, body=None, headers=None, close_after=False, drop=False, delay=0.0):
        if body is None:
            body = json.dumps(payload if payload is not None else {}).encode('utf-8')
        self.status = status
        self.body = body
        self.headers = dict(headers or {})
        self.close_after = close_after
        self.drop = drop
        self.delay = delay


class RecordedRequest(object):
    def __init__(self, method, target, headers, body, peer):
        self.method = method
        self.target = target
        parts = urlsplit(target)
        self.path = parts.path
        self.query = parse_qs(parts.query, keep_blank_values=True)
        self.headers = headers
        self.body = body
        # The client's port tells one TCP connection from another.
        self.peer = peer


class LoopbackImds(object):
    """Scripted HTTP/1.1 server on 127.0.0.1; see ``Reply``."""

    def __init__(self):
        self.requests = []
        self._scripts = {}
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        self.server = ThreadingHTTPServer(('127.0.0.1', 0), _make_handler(self))
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.origin = 'http://127.0.0.1:%d' % self.port
        self.endpoint = self.origin + '/metadata/scheduledevents'
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={'poll_interval': 0.01})
        self._thread.daemon = True
        self._thread.start()

    def script(self, path, *replies):
        """Answer requests to ``path`` with ``replies`` in turn; the last one repeats."""
        with self._lock:
            self._scripts[path] = list(replies)

    def next_reply(self, path):
        with self._lock:
            replies = self._scripts.get(path)
            if not replies:
                return Reply(404, {'error': 'Not found. Unknown IMDS path %s' % path})
            return replies.pop(0) if len(replies) > 1 else replies[0]

    def record(self, request):
        with self._lock:
            self.requests.append(request)

    def stop(self):
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(_SERVER_WAIT_LIMIT_SECONDS)


def _make_handler(imds):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = 'HTTP/1.1'
        # Headers and body leave in separate writes; without this, Nagle and
        # delayed ACKs add 40 ms to every answer.
        disable_nagle_algorithm = True
        # An idle kept-alive connection ends its thread after this long.
        timeout = _SERVER_WAIT_LIMIT_SECONDS

        def log_message(self, *args):  # pylint: disable=arguments-differ
            pass

        def _answer(self):
            length = int(self.headers.get('Content-Length') or 0)
            body = self.rfile.read(length) if length else b''
            imds.record(RecordedRequest(self.command, self.path, self.headers, body, self.client_address[1]))
            reply = imds.next_reply(urlsplit(self.path).path)
            if reply.delay:
                imds.stopping.wait(min(reply.delay, _SERVER_WAIT_LIMIT_SECONDS))
            if reply.drop:
                self.close_connection = True
                return
            try:
                self.send_response(reply.status)
                self.send_header('Content-Type', 'application/json; charset=utf-8')
                self.send_header('Content-Length', str(len(reply.body)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(reply.body)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                # The client gave up before a delayed answer (the time-out
                # tests): nobody is left to answer, and socketserver would
                # print the traceback into the test run's output.
                self.close_connection = True
                return
            if reply.close_after:
                self.close_connection = True

        do_GET = do_POST = do_PUT = do_DELETE = _answer

    return Handler


@pytest.fixture
def loopback_imds():
    imds = LoopbackImds()
    try:
        yield imds
    finally:
        imds.stop()


@pytest.fixture
def reply():
    """Factory for the loopback server's scripted answers; see ``Reply``."""
    return Reply


@pytest.fixture
def trap_listener():
    """A listening socket that must never be connected to (a proxy that must not be used).

    Yields ``(port, was_connected)``; ``was_connected()`` checks without blocking long.
    """
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(('127.0.0.1', 0))
    listener.listen(4)
    listener.settimeout(0.05)

    def was_connected():
        try:
            connection, dummy = listener.accept()
        except socket.timeout:
            return False
        connection.close()
        return True

    try:
        yield listener.getsockname()[1], was_connected
    finally:
        listener.close()


@pytest.fixture
def closed_port():
    """A loopback port that refuses connections at once, for the whole test.

    The socket stays bound and never listens: a connection is refused, and
    no other program can take the port while the test runs.
    """
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(('127.0.0.1', 0))
    try:
        yield holder.getsockname()[1]
    finally:
        holder.close()
