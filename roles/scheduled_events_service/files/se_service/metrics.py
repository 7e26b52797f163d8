# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Metrics in the Prometheus text exposition format.

Exposed through a node_exporter textfile (written atomically) and/or a small
HTTP listener that only ever binds a loopback address. The listener serves
each connection from a thread of its own with a time limit, so a client that
connects and says nothing holds one thread for a few seconds, never the
daemon.
"""

import errno
import socket
import sys
import threading

from .atomic import write_atomically

PREFIX = 'scheduled_events_service_'
# Poll latencies of a healthy IMDS are milliseconds; the upper buckets catch
# the first call (up to two minutes) and stalls during a Freeze.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 130.0)

_DESCRIPTIONS = (
    ('events_seen_total', 'counter', 'Events seen, counted once per event and status, by type, status and whether they list '
     'this VM (true, false, or unknown while its name is not known).'),
    ('hooks_run_total', 'counter', 'Hooks run, by phase.'),
    ('hooks_failed_total', 'counter', 'Hooks that failed, timed out or were refused, by phase.'),
    ('approvals_total', 'counter', 'Events approved by this VM.'),
    ('approval_errors_total', 'counter', 'Approval requests IMDS did not accept.'),
    ('polls_total', 'counter', 'Polls of the Scheduled Events endpoint.'),
    ('poll_errors_total', 'counter', 'Polls that got no usable document, by kind of error.'),
    ('poll_duration_seconds', 'histogram', 'Time to get and parse the events document.'),
    ('document_incarnation', 'gauge', 'DocumentIncarnation of the last document.'),
    ('pending_events', 'gauge', 'Events in the last document, by whether they list this VM (true, false, unknown).'),
    ('last_successful_poll_timestamp_seconds', 'gauge', 'Unix time of the last successful poll.'),
    ('state_save_errors_total', 'counter', 'Attempts to save the state file that failed.'),
    ('state_save_failing', 'gauge', '1 while the state file cannot be saved (a restart would run hooks again), else 0.'),
)


def _escape(value):
    return str(value).replace('\\', '\\\\').replace('\n', '\\n').replace('"', '\\"')


def _labels(pairs):
    if not pairs:
        return ''
    return '{%s}' % ','.join('%s="%s"' % (name, _escape(value)) for name, value in pairs)


def _number(value):
    if isinstance(value, float) and value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


class Metrics(object):
    """Thread-safe counters, gauges and the poll latency histogram."""

    def __init__(self):
        self._lock = threading.Lock()
        self._values = {}
        self._latency_counts = [0] * len(LATENCY_BUCKETS)
        self._latency_sum = 0.0
        self._latency_count = 0

    def add(self, name, amount=1, **labels):
        key = (name, tuple(sorted(labels.items())))
        with self._lock:
            self._values[key] = self._values.get(key, 0) + amount

    def set(self, name, value, **labels):
        key = (name, tuple(sorted(labels.items())))
        with self._lock:
            self._values[key] = value

    def value(self, name, **labels):
        """One series' value (0 when never set); for tests and ``--once``."""
        with self._lock:
            return self._values.get((name, tuple(sorted(labels.items()))), 0)

    def observe_poll(self, seconds):
        with self._lock:
            self._latency_sum += seconds
            self._latency_count += 1
            for position, bound in enumerate(LATENCY_BUCKETS):
                if seconds <= bound:
                    self._latency_counts[position] += 1

    def render(self):
        """The exposition text of every metric."""
        with self._lock:
            values = dict(self._values)
            counts, total, count = list(self._latency_counts), self._latency_sum, self._latency_count
        lines = []
        for name, kind, help_text in _DESCRIPTIONS:
            full = PREFIX + name
            lines.append('# HELP %s %s' % (full, help_text))
            lines.append('# TYPE %s %s' % (full, kind))
            if kind == 'histogram':
                for bound, bucket_count in zip(LATENCY_BUCKETS, counts):
                    lines.append('%s_bucket{le="%s"} %d' % (full, _number(float(bound)), bucket_count))
                lines.append('%s_bucket{le="+Inf"} %d' % (full, count))
                lines.append('%s_sum %s' % (full, _number(round(total, 6))))
                lines.append('%s_count %d' % (full, count))
                continue
            series = sorted((labels, value) for (metric, labels), value in values.items() if metric == name)
            if not series and kind == 'counter' and name in ('approvals_total', 'approval_errors_total', 'polls_total', 'state_save_errors_total'):
                series = [((), 0)]
            for labels, value in series:
                lines.append('%s%s %s' % (full, _labels(labels), _number(value)))
        return '\n'.join(lines) + '\n'


# How long a scrape connection may stay silent before it is closed.
CONNECTION_TIMEOUT_SECONDS = 5.0


class MetricsListenError(Exception):
    """The metrics address cannot be listened on; the message says what to do."""


def write_textfile(path, text):
    """Replace the textfile atomically: node_exporter must never read half a file."""
    write_atomically(path, text.encode('utf-8'), mode=0o644)


def _is_our_listener(host, port, timeout=2.0):
    """True when ``host:port`` answers /metrics with this service's metrics (a running instance)."""
    import http.client
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.request('GET', '/metrics')
        return PREFIX.encode('ascii') in connection.getresponse().read(65536)
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def check_listen_address(host, port):
    """Raise MetricsListenError unless ``host:port`` can be listened on, or a running instance of this service holds it."""
    probe = socket.socket(socket.AF_INET6 if ':' in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        probe.bind((host, port))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE and _is_our_listener(host, port):
            return
        raise _listen_error(host, port, exc)
    finally:
        probe.close()


def _listen_error(host, port, exc):
    if exc.errno == errno.EADDRINUSE:
        return MetricsListenError('metrics.listen %s:%d is already in use by another program; choose a free port '
                                  '(ss -ltnp shows who holds it) or use metrics.textfile' % (host, port))
    return MetricsListenError('metrics.listen %s:%d cannot be listened on (%s)' % (host, port, exc.strerror or exc))


class MetricsServer(object):
    """The loopback-only /metrics listener: a thread per connection, each with a time limit."""

    def __init__(self, metrics, host, port):
        # Imported here: most installations never serve metrics, and the idle
        # service is meant to stay small.
        from http.server import BaseHTTPRequestHandler, HTTPServer
        from socketserver import ThreadingMixIn

        class _MetricsHandler(BaseHTTPRequestHandler):
            server_version = 'scheduled-events-service'
            # Applied to the connection's socket: a silent or slow client is dropped.
            timeout = CONNECTION_TIMEOUT_SECONDS

            def do_GET(self):
                if self.path.split('?', 1)[0] not in ('/metrics', '/'):
                    self.send_error(404, 'only /metrics is served')
                    return
                body = self.server.metrics.render().encode('utf-8')
                self.send_response(200)
                self.send_header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                """Scrapes are not worth a log line each."""

        # ThreadingHTTPServer, written out: Python 3.6 (RHEL 8) has no such class.
        class _Server(ThreadingMixIn, HTTPServer):
            address_family = socket.AF_INET6 if ':' in host else socket.AF_INET
            # Connection threads never delay a stop or a reload.
            daemon_threads = True
            block_on_close = False

            def handle_error(self, request, client_address):
                # A scraper that hung up before its answer (its own time-out
                # ran out) costs the service nothing; socketserver would write
                # a traceback into the journal for every such scrape. Any
                # other error is a fault of ours and keeps its traceback.
                if isinstance(sys.exc_info()[1], ConnectionError):
                    return
                HTTPServer.handle_error(self, request, client_address)

        try:
            self.server = _Server((host, port), _MetricsHandler)
        except OSError as exc:
            raise _listen_error(host, port, exc)
        self.server.metrics = metrics
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={'poll_interval': 0.5},
                                       name='metrics-http')
        self.thread.daemon = True

    @property
    def address(self):
        return self.server.server_address[:2]

    def start(self):
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
