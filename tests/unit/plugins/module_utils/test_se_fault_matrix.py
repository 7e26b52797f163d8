# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fault matrix: every documented IMDS fault x every consumer -> the outcome it must have.

Consumers, as the collection builds them:

- ``module_read``: a module or the lookup reading the document once
  (retries 5, the default deadline);
- ``module_approve``: the approve module's POST (retries 5);
- ``poller``: the daemon's and the EDA source's shared poller (one read per
  round, no retries for the daemon) over several rounds;
- ``daemon_approve``: the daemon's approval POST (retries 0, the poller's
  short deadline).

A fault answers the first ``times`` requests, then IMDS is healthy again
(``times`` None: for ever). Time is a fake clock that each attempt advances
by what it would cost (a hung IMDS costs the whole read timeout), so the
bounds asserted are the real ones, with no real waiting.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_client import ImdsClient
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import (
    ImdsHttpError,
    ImdsRedirectError,
    ImdsTimeoutError,
    ImdsUnreachableError,
    MalformedDocumentError,
    ScheduledEventsError,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_poller import Poller
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_retry import RetryPolicy
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_transport import HttpResponse

EVENT_ID = 'C7061BAC-AFDC-4513-B24B-AA5F13A16123'
HEALTHY = {'DocumentIncarnation': 2, 'Events': [{'EventId': EVENT_ID, 'EventType': 'Freeze', 'EventStatus': 'Scheduled',
                                                 'Resources': ['vm0'], 'NotBefore': 'Mon, 11 Apr 2022 22:26:58 GMT'}]}
HEALTHY_BODY = json.dumps(HEALTHY).encode('utf-8')
TIMEOUT = 3.0
POLL_INTERVAL = 1.0


def _status(status, headers=None):
    return ('answer', HttpResponse(status, dict(headers or {}), json.dumps({'error': 'fault %d' % status}).encode()))


def _body(body):
    return ('answer', HttpResponse(200, {}, body))


# fault name -> (what a faulty request gets, how many requests get it (None: all))
FAULTS = {
    'http_400': (_status(400), None),
    'http_404': (_status(404), None),
    'http_405': (_status(405), None),
    'http_410_once': (_status(410), 1),
    'http_410_forever': (_status(410), None),
    'http_429_retry_after': (_status(429, {'retry-after': '3'}), 1),
    'http_429_forever': (_status(429), None),
    'http_500_once': (_status(500), 1),
    'http_503_forever': (_status(503), None),
    'redirect': (('answer', HttpResponse(302, {'location': 'http://elsewhere/'}, b'')), None),
    'hung': (('hang', None), None),
    'refused': (('refuse', None), None),
    'malformed_once': (_body(b'{"DocumentIncarnation": 2, "Ev'), 1),
    'bom': (_body(b'\xef\xbb\xbf' + HEALTHY_BODY), None),
    'invalid_utf8': (_body(HEALTHY_BODY.replace(b'Freeze"', b'Freeze", "Description": "\xff"')), None),
    'incarnation_2.0': (_body(HEALTHY_BODY.replace(b'"DocumentIncarnation": 2', b'"DocumentIncarnation": 2.0')), None),
    'incarnation_5000_digits': (_body(HEALTHY_BODY.replace(b'"DocumentIncarnation": 2',
                                                           b'"DocumentIncarnation": "' + b'9' * 5000 + b'"')), None),
}


class FaultyImds(object):
    """A transport on a fake clock: the fault for the first requests, then healthy answers."""

    def __init__(self, fault):
        self.outcome, self.remaining = FAULTS[fault]
        self.now = 1000.0
        self.requests = []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds

    def close(self):
        pass

    def _applies(self, url):
        kind, response = self.outcome
        # A bad body is a fault of the events document; statuses, hangs and
        # refusals hit every path (the identity lookup too).
        return not (kind == 'answer' and response.status == 200 and '/metadata/scheduledevents' not in url)

    def request(self, method, url, headers, body=None, connect_timeout=5.0, read_timeout=10.0):
        self.requests.append((method, self.now))
        self.now += 0.01
        if self._applies(url) and (self.remaining is None or self.remaining > 0):
            if self.remaining is not None:
                self.remaining -= 1
            kind, response = self.outcome
            if kind == 'hang':
                self.now += read_timeout
                raise ImdsTimeoutError('no answer from %s within %s s' % (url, read_timeout), url=url)
            if kind == 'refuse':
                raise ImdsUnreachableError('could not connect to %s (Connection refused)' % url, url=url)
            if method == 'POST' and response.status == 200:
                return HttpResponse(200, {}, b'')
            return response
        if method == 'POST':
            return HttpResponse(200, {}, b'')
        if '/metadata/instance/compute' in url:
            return HttpResponse(200, {}, b'{"name": "vm0"}')
        return HttpResponse(200, {}, HEALTHY_BODY)


def _client(transport, retries):
    return ImdsClient(endpoint='http://169.254.169.254/metadata/scheduledevents', timeout=TIMEOUT, retries=retries,
                      transport=transport, sleep=transport.sleep, monotonic=transport.monotonic,
                      policy=RetryPolicy(retries=retries, random_func=lambda: 0.0))


class Outcome(object):
    """What a consumer did: ``result`` (ok, or the error class name), seconds spent, requests sent, extras."""

    def __init__(self, result, seconds, requests, **extra):
        self.result = result
        self.seconds = seconds
        self.requests = requests
        self.extra = extra

    def __repr__(self):
        return 'Outcome(%s, %.2f s, %d requests, %r)' % (self.result, self.seconds, self.requests, self.extra)


def _run_once(transport, action):
    started = transport.now
    try:
        value = action()
    except ScheduledEventsError as exc:
        return Outcome(type(exc).__name__, transport.now - started, len(transport.requests), message=exc.message)
    return Outcome('ok', transport.now - started, len(transport.requests), value=value)


def module_read(fault):
    transport = FaultyImds(fault)
    client = _client(transport, retries=5)
    return _run_once(transport, lambda: client.get_document()[0])


def module_approve(fault):
    transport = FaultyImds(fault)
    client = _client(transport, retries=5)
    client.first_call_pending = False
    return _run_once(transport, lambda: client.approve([EVENT_ID]))


def daemon_approve(fault):
    transport = FaultyImds(fault)
    client = _client(transport, retries=0)
    client.first_call_pending = False
    poller = Poller(client, POLL_INTERVAL, resource_name='vm0', clock=transport.monotonic)
    return _run_once(transport, lambda: client.approve([EVENT_ID], deadline=poller.quick_deadline()))


def poller(fault, rounds=6, resource_name=None):
    """Several rounds of the shared poller; the outcome says whether it saw the document and the longest round."""
    transport = FaultyImds(fault)
    client = _client(transport, retries=0)
    shared = Poller(client, POLL_INTERVAL, resource_name=resource_name, clock=transport.monotonic)
    started = transport.now
    longest, documents, delays, warnings = 0.0, [], [], []
    for dummy in range(rounds):
        round_started = transport.now
        result = shared.poll()
        longest = max(longest, transport.now - round_started)
        delays.append(result.delay)
        warnings.extend(text for level, text in result.messages if level == 'warning')
        if result.ok:
            documents.append(result.document)
        transport.now = round_started + max(result.delay, transport.now - round_started)
    result = 'ok' if documents else 'no_document'
    return Outcome(result, transport.now - started, len(transport.requests), longest_round=longest,
                   documents=documents, delays=delays, warnings=warnings)


CONSUMERS = {'module_read': module_read, 'module_approve': module_approve, 'daemon_approve': daemon_approve,
             'poller': poller}

# The first-call allowance: the only attempt allowed to wait longer than TIMEOUT.
FIRST_CALL = 130.0
# (fault, consumer) -> (expected result, most seconds it may take, most requests it may send)
MATRIX = {
    # The request itself is wrong: never retried, by anyone.
    ('http_400', 'module_read'): ('ImdsHttpError', 0.1, 1),
    ('http_400', 'module_approve'): ('ImdsHttpError', 0.1, 1),
    ('http_400', 'daemon_approve'): ('ImdsHttpError', 0.1, 1),
    ('http_400', 'poller'): ('no_document', 6 * POLL_INTERVAL + 1, 6 + 6),
    ('http_404', 'module_read'): ('ImdsHttpError', 0.1, 1),
    ('http_404', 'module_approve'): ('ImdsHttpError', 0.1, 1),
    ('http_405', 'module_read'): ('ImdsHttpError', 0.1, 1),
    ('http_405', 'daemon_approve'): ('ImdsHttpError', 0.1, 1),
    # 410: one-shot callers retry it; the daemon's approval and the poller never hold for 70 s.
    ('http_410_once', 'module_read'): ('ok', 1.0, 2),
    ('http_410_once', 'module_approve'): ('ok', 1.0, 2),
    ('http_410_once', 'daemon_approve'): ('ImdsHttpError', 0.1, 1),
    ('http_410_once', 'poller'): ('ok', 6 * POLL_INTERVAL + 1, 12),
    ('http_410_forever', 'module_read'): ('ImdsHttpError', 71.0, 40),
    ('http_410_forever', 'module_approve'): ('ImdsHttpError', 71.0, 40),
    ('http_410_forever', 'daemon_approve'): ('ImdsHttpError', 0.1, 1),
    ('http_410_forever', 'poller'): ('no_document', 6 * POLL_INTERVAL + 1, 12),
    # 429 with Retry-After: honoured (3 s), then answered.
    ('http_429_retry_after', 'module_read'): ('ok', 3.1, 2),
    ('http_429_retry_after', 'module_approve'): ('ok', 3.1, 2),
    ('http_429_retry_after', 'poller'): ('ok', 3 + 6 * POLL_INTERVAL + 1, 12),
    ('http_429_forever', 'module_read'): ('ImdsHttpError', 16.0, 6),
    ('http_429_forever', 'daemon_approve'): ('ImdsHttpError', 0.1, 1),
    ('http_429_forever', 'poller'): ('no_document', 1 + 2 + 4 + 8 + 10 + 10 + 1, 12),
    ('http_500_once', 'module_read'): ('ok', 1.0, 2),
    ('http_500_once', 'module_approve'): ('ok', 1.0, 2),
    ('http_500_once', 'daemon_approve'): ('ImdsHttpError', 0.1, 1),
    ('http_500_once', 'poller'): ('ok', 6 * POLL_INTERVAL + 1, 12),
    ('http_503_forever', 'module_read'): ('ImdsHttpError', 16.0, 6),
    ('http_503_forever', 'poller'): ('no_document', 1 + 2 + 4 + 8 + 10 + 10 + 1, 12),
    # Something answered in IMDS's place: never followed, never retried.
    ('redirect', 'module_read'): ('ImdsRedirectError', 0.1, 1),
    ('redirect', 'daemon_approve'): ('ImdsRedirectError', 0.1, 1),
    # A hung IMDS: one long first call, then TIMEOUT per attempt, all within the deadline.
    ('hung', 'module_read'): ('ImdsTimeoutError', 150.0, 7),
    ('hung', 'module_approve'): ('ImdsTimeoutError', 6 * TIMEOUT + 16.0, 6),
    ('hung', 'daemon_approve'): ('ImdsTimeoutError', TIMEOUT + 0.1, 1),
    # Each round: the identity lookup (one time-out) and the read; only the first read gets the allowance.
    ('hung', 'poller'): ('no_document', FIRST_CALL + 6 * (2 * TIMEOUT + POLL_INTERVAL) + 1, 12),
    ('refused', 'module_read'): ('ImdsUnreachableError', 16.0, 6),
    ('refused', 'daemon_approve'): ('ImdsUnreachableError', 0.1, 1),
    ('refused', 'poller'): ('no_document', 6 * POLL_INTERVAL + 1, 12),
    ('malformed_once', 'module_read'): ('ok', 1.0, 2),
    ('malformed_once', 'poller'): ('ok', 6 * POLL_INTERVAL + 1, 12),
    # Parsing: one bad byte or a BOM hides nothing; one numeric rule.
    ('bom', 'module_read'): ('ok', 0.1, 1),
    ('bom', 'poller'): ('ok', 6 * POLL_INTERVAL + 1, 7),
    ('invalid_utf8', 'module_read'): ('ok', 0.1, 1),
    ('invalid_utf8', 'poller'): ('ok', 6 * POLL_INTERVAL + 1, 7),
    ('incarnation_2.0', 'module_read'): ('ok', 0.1, 1),
    ('incarnation_5000_digits', 'module_read'): ('MalformedDocumentError', 16.0, 6),
    ('incarnation_5000_digits', 'poller'): ('no_document', 6 * POLL_INTERVAL + 1, 12),
}


@pytest.mark.parametrize('fault, consumer', sorted(MATRIX), ids=['%s-%s' % key for key in sorted(MATRIX)])
def test_fault_matrix(fault, consumer):
    expected, most_seconds, most_requests = MATRIX[(fault, consumer)]
    outcome = CONSUMERS[consumer](fault)
    assert outcome.result == expected, outcome
    assert outcome.seconds <= most_seconds, outcome
    assert outcome.requests <= most_requests, outcome


def test_every_fault_is_in_the_matrix():
    assert set(fault for fault, dummy in MATRIX) == set(FAULTS)


# --- what the matrix cannot say in one word ---------------------------------------------------------------

def test_the_poller_never_freezes_on_410():
    outcome = poller('http_410_forever')
    # Every round ends within a poll interval or a time-out: never the 70 s a one-shot request may spend.
    assert outcome.extra['longest_round'] <= max(POLL_INTERVAL, TIMEOUT) + 0.1


def test_the_poller_honours_retry_after_then_goes_back_to_the_beat():
    outcome = poller('http_429_retry_after', resource_name='vm0')
    assert outcome.extra['delays'][0] == 3.0
    assert outcome.extra['delays'][1:] == [POLL_INTERVAL] * 5


def test_the_poller_warns_once_about_repair_and_keeps_the_events():
    outcome = poller('invalid_utf8')
    assert all(document['events'][0]['event_id'] == EVENT_ID for document in outcome.extra['documents'])
    assert len([text for text in outcome.extra['warnings'] if 'not UTF-8' in text]) == 1


def test_a_hung_endpoint_spends_the_first_call_allowance_once():
    transport = FaultyImds('hung')
    client = _client(transport, retries=5)
    with pytest.raises(ImdsTimeoutError) as caught:
        client.get_document()
    waits = [later - earlier for (dummy, earlier), (dummy2, later) in zip(transport.requests, transport.requests[1:])]
    assert waits[0] >= FIRST_CALL and all(wait < FIRST_CALL for wait in waits[1:])
    assert 'the first request of this VM waited 130 s' in caught.value.message
    assert 'at most 3 s each' in caught.value.message


def test_the_5000_digit_incarnation_is_refused_briefly():
    outcome = module_read('incarnation_5000_digits')
    assert len(outcome.extra['message']) < 600
    assert isinstance(MalformedDocumentError('x'), ScheduledEventsError)


def test_redirect_and_http_errors_name_what_to_do():
    assert 'Reach IMDS directly' in module_read('redirect').extra['message']
    assert 'What to do' in module_read('http_404').extra['message']
    assert issubclass(ImdsRedirectError, ScheduledEventsError) and issubclass(ImdsHttpError, ScheduledEventsError)


class FaultyIdentity(FaultyImds):
    """The fault hits the identity lookup (instance/compute) only; the events document is healthy."""

    def _applies(self, url):
        return '/metadata/instance/compute' in url


@pytest.mark.parametrize('fault', ['http_410_once', 'http_429_retry_after', 'http_500_once', 'hung', 'refused',
                                   'http_503_forever'])
def test_identity_faults_hide_no_event_and_are_retried_until_known(fault):
    transport = FaultyIdentity(fault)
    client = _client(transport, retries=0)
    client.first_call_pending = False
    shared = Poller(client, POLL_INTERVAL, clock=transport.monotonic)
    seen = []
    for dummy in range(8):
        round_started = transport.now
        result = shared.poll()
        # Every round reads the events, whatever the lookup did; no round is held long.
        assert result.ok and transport.now - round_started <= TIMEOUT + 0.1
        seen.append(shared.identity.affects(result.document['events'][0]))
        transport.now = round_started + result.delay
    if FAULTS[fault][1] is None:
        # Never known: every event stays possibly ours (None), never guessed as someone else's (False).
        assert seen == [None] * 8
    else:
        # Known as soon as IMDS answers, within the identity backoff (at most 5 s, or a Retry-After of 3 s):
        # by the fifth round, one second apart.
        assert seen[0] is None and True in seen[:5] and seen[-1] is True
