# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A steady load through the load balancer, counting every failed request.

A request fails when it gets no answer within the client time-out, a
connection error, or any status other than 200. Each request uses its own
connection, so a failure is always the service's, never a stale keep-alive
connection of the client. The summary counts failures by kind: a time-out
(HAProxy's 504 when a server does not answer within its server time-out, or
no answer within the client's) is told apart from the rest (no server left
in a pool, a connection cut that retries could not save).
"""

import http.client
import threading
import time


TIME_OUT = 'time-out'


def failure_kind(status, error):
    """What went wrong with a request that failed: TIME_OUT, 'status <code>' or the error's type."""
    if status == 504 or (status is None and (error or '').startswith('TimeoutError')):
        return TIME_OUT
    if status is not None:
        return 'status %d' % status
    return (error or 'error').partition(':')[0]


class LoadGenerator:
    def __init__(self, host, port, rate=60.0, workers=6, paths=('/', '/api/orders'), timeout=5.0):
        self.host = host
        self.port = port
        self.rate = float(rate)
        self.workers = workers
        self.paths = paths
        self.timeout = timeout
        self.results = []  # (time, path, status or None, error or None, backend or None)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = []
        self.started = None
        self.stopped = None

    def start(self):
        self.started = time.time()
        for index in range(self.workers):
            thread = threading.Thread(target=self._work, args=(index,), name='load-%d' % index, daemon=True)
            thread.start()
            self._threads.append(thread)

    def _work(self, index):
        interval = self.workers / self.rate
        next_at = time.monotonic() + index * interval / self.workers
        count = 0
        while not self._stop.is_set():
            delay = next_at - time.monotonic()
            if delay > 0 and self._stop.wait(delay):
                break
            next_at += interval
            path = self.paths[(index + count) % len(self.paths)]
            count += 1
            self._record(path, *self._request(path))

    def _request(self, path):
        connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            connection.request('GET', path, headers={'Connection': 'close'})
            response = connection.getresponse()
            response.read()
            return response.status, None if response.status == 200 else response.reason, response.getheader('X-Backend')
        except (OSError, http.client.HTTPException) as exc:
            return None, '%s: %s' % (type(exc).__name__, exc), None
        finally:
            connection.close()

    def _record(self, path, status, error, backend):
        with self._lock:
            self.results.append((time.time(), path, status, error, backend))

    def stop(self):
        self._stop.set()
        for thread in self._threads:
            thread.join(self.timeout + 2)
        self.stopped = time.time()

    def summary(self):
        with self._lock:
            results = list(self.results)
        failures = [result for result in results if result[2] != 200]
        seconds = max((self.stopped or time.time()) - (self.started or time.time()), 0.001)
        by_backend = {}
        for result in results:
            if result[4]:
                by_backend[result[4]] = by_backend.get(result[4], 0) + 1
        failed_by_kind = {}
        for failure in failures:
            kind = failure_kind(failure[2], failure[3])
            failed_by_kind[kind] = failed_by_kind.get(kind, 0) + 1
        return {'requests': len(results), 'failed': len(failures), 'failed_by_kind': failed_by_kind,
                'seconds': round(seconds, 2), 'rate': round(len(results) / seconds, 1), 'by_backend': by_backend,
                'failures': [{'time': f[0], 'path': f[1], 'status': f[2], 'error': f[3]} for f in failures[:50]]}

    def rate_between(self, start, end):
        with self._lock:
            count = sum(1 for result in self.results if start <= result[0] <= end)
        return count / max(end - start, 0.001)
