"""Injected faults: answers IMDS would give on a bad day.

A rule applies to the next ``count`` requests matching its VM, path and
method, before any normal handling (throttle, header checks, documents).
"""

import threading
import time

__all__ = ['FaultError', 'FaultRules', 'FAULT_KINDS', 'check_fault', 'path_kind']

FAULT_KINDS = ('status', 'delay', 'malformed', 'reset', 'redirect')
_PATHS = ('scheduledevents', 'compute')
_METHODS = ('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD')
_KEYS = ('vm', 'path', 'method', 'count', 'kind', 'status', 'delay_seconds', 'location', 'retry_after')


class FaultError(ValueError):
    """A fault request is malformed; the message names the field."""


def path_kind(path):
    """``scheduledevents``, ``compute`` (any /metadata/instance path) or None."""
    if path == '/metadata/scheduledevents':
        return 'scheduledevents'
    if path == '/metadata/instance' or path.startswith('/metadata/instance/'):
        return 'compute'
    return None


def check_fault(request, known_vms):
    if not isinstance(request, dict):
        raise FaultError('a fault must be a JSON object such as {"kind": "status", "status": 503, "count": 1}')
    unknown = sorted(set(request) - set(_KEYS))
    if unknown:
        raise FaultError('unknown field(s) %s; allowed: %s' % (', '.join(unknown), ', '.join(_KEYS)))
    kind = request.get('kind')
    if kind not in FAULT_KINDS:
        raise FaultError('kind must be one of %s, got %r' % (', '.join(FAULT_KINDS), kind))
    vm = request.get('vm')
    if vm is not None and vm not in known_vms:
        raise FaultError('vm %r is not a known VM (known: %s); use null for all VMs'
                         % (vm, ', '.join(sorted(known_vms))))
    path = request.get('path')
    if path is not None and path not in _PATHS:
        raise FaultError('path must be "scheduledevents", "compute" or null for any, got %r' % (path,))
    method = request.get('method')
    if method is not None and (not isinstance(method, str) or method.upper() not in _METHODS):
        raise FaultError('method must be one of %s or null for any, got %r' % (', '.join(_METHODS), method))
    count = request.get('count', 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise FaultError('count must be a whole number >= 1, got %r' % (count,))
    rule = {'vm': vm, 'path': path, 'method': method.upper() if method else None, 'count': count, 'kind': kind}
    if kind == 'status':
        status = request.get('status', 500)
        if isinstance(status, bool) or not isinstance(status, int) or not 200 <= status <= 599:
            raise FaultError('status must be an HTTP status from 200 to 599, got %r' % (status,))
        rule['status'] = status
        retry_after = request.get('retry_after')
        if retry_after is not None:
            if isinstance(retry_after, bool) or not isinstance(retry_after, int) or retry_after < 0:
                raise FaultError('retry_after must be a whole number of seconds >= 0, got %r' % (retry_after,))
            rule['retry_after'] = retry_after
    elif kind == 'delay':
        delay = request.get('delay_seconds')
        if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not 0 <= delay <= 300:
            raise FaultError('delay_seconds must be a number of real seconds from 0 to 300, got %r' % (delay,))
        rule['delay_seconds'] = delay
    elif kind == 'redirect':
        location = request.get('location')
        if not isinstance(location, str) or not location:
            raise FaultError('a redirect fault needs "location", the URL to send the client to')
        status = request.get('status', 307)
        if status not in (301, 302, 303, 307, 308):
            raise FaultError('a redirect status must be 301, 302, 303, 307 or 308, got %r' % (status,))
        rule['location'] = location
        rule['status'] = status
    return rule


class FaultRules:
    """The pending fault rules; the oldest matching rule wins."""

    def __init__(self):
        self._lock = threading.Lock()
        self._rules = []
        self._next_id = 1
        # Counts the clears, so that a request held by a delay fault knows
        # whether one came while it waited (see hold).
        self._clears = 0
        self._cleared = threading.Condition(self._lock)

    def add(self, rule):
        with self._lock:
            rule = dict(rule, id=self._next_id, applied=0)
            self._next_id += 1
            self._rules.append(rule)
            return dict(rule)

    def take(self, vm, path, method):
        """The rule to apply to this request (its count used up by one), or None."""
        kind_of_path = path_kind(path)
        with self._lock:
            for rule in self._rules:
                if rule['vm'] not in (None, vm):
                    continue
                if rule['path'] is not None and rule['path'] != kind_of_path:
                    continue
                if rule['method'] not in (None, method):
                    continue
                rule['count'] -= 1
                rule['applied'] += 1
                if rule['count'] <= 0:
                    self._rules.remove(rule)
                return dict(rule)
        return None

    def pending(self):
        with self._lock:
            return [dict(rule) for rule in self._rules]

    def clear(self):
        """Drop the pending rules and let the requests held by a delay fault go on at once."""
        with self._lock:
            self._rules = []
            self._clears += 1
            self._cleared.notify_all()

    def hold(self, seconds):
        """Hold a request for a delay fault: ``seconds`` real seconds, or until the faults are cleared.

        A test that holds a request back to put something between it and its
        answer clears the faults once that is done, instead of waiting out a
        delay made long enough for the slowest machine.
        """
        deadline = time.monotonic() + seconds
        with self._lock:
            clears = self._clears
            while self._clears == clears:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._cleared.wait(left)
