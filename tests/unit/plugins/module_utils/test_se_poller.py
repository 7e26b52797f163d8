# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The shared poller: backoff, identity, change tracking, repeat-limited messages.

A scripted client on a fake clock: nothing here waits for real time.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import (
    ImdsHttpError,
    ImdsTimeoutError,
    MalformedDocumentError,
    RequestCancelledError,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_document import parse_document
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_poller import (
    CHANGE_CHANGED,
    CHANGE_NEW,
    CHANGE_REMOVED,
    CHANGE_STARTED,
    MAX_POLL_BACKOFF_SECONDS,
    ApprovalGate,
    Backoff,
    Identity,
    Poller,
    RepeatLimiter,
    incarnation_reset_message,
    track_changes,
)

FREEZE = {'EventId': 'C7061BAC-AFDC-4513-B24B-AA5F13A16123', 'EventType': 'Freeze', 'EventStatus': 'Scheduled',
          'Resources': ['vm0', 'vm1'], 'NotBefore': 'Mon, 11 Apr 2022 22:26:58 GMT', 'DurationInSeconds': 5}


def document(incarnation, *events):
    return {'DocumentIncarnation': incarnation, 'Events': list(events)}


def started(event):
    changed = dict(event)
    changed.update({'EventStatus': 'Started', 'NotBefore': ''})
    return changed


def http_error(status, retry_after=None):
    return ImdsHttpError('HTTP %d' % status, status=status, retry_after=retry_after)


class FakeClient(object):
    """Plays scripted outcomes for the events path and the compute path separately."""

    def __init__(self, clock, documents=(), identities=(), timeout=10.0):
        self.clock = clock
        self.documents = list(documents)
        self.identities = list(identities)
        self.timeout = timeout
        self.first_call_pending = False
        self.calls = []

    def _next(self, script, what):
        if not script:
            raise AssertionError('%s script exhausted' % what)
        outcome = script.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def get_document(self, deadline=None):
        self.calls.append(('events', deadline))
        raw = self._next(self.documents, 'document')
        return parse_document(raw), raw

    def get_json(self, path, deadline=None):
        self.calls.append(('compute', deadline))
        return self._next(self.identities, 'identity')


class Clock(object):
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock():
    return Clock()


# --- backoff ----------------------------------------------------------------

@pytest.mark.parametrize('failures, expected', [
    ([http_error(500)], [1.0]),
    ([http_error(429)] * 6, [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]),
    # Time-outs and malformed answers ask for no less traffic: the normal beat.
    ([ImdsTimeoutError('slow'), MalformedDocumentError('bad')], [1.0, 1.0]),
    # Retry-After is honoured, within the cap.
    ([http_error(503, retry_after=4.0)], [4.0]),
    ([http_error(429, retry_after=3600.0)], [10.0]),
])
def test_backoff_after_failures(clock, failures, expected):
    backoff = Backoff(1.0, 10.0, clock)
    assert [backoff.failed(exc) for exc in failures] == expected
    assert not backoff.ready()
    clock.now += expected[-1]
    assert backoff.ready()
    backoff.succeeded()
    assert backoff.failed(http_error(500)) == 1.0


def test_repeat_limiter_is_not_reset_by_successes_in_between(clock):
    limiter = RepeatLimiter(60.0, clock)
    said = []
    for second in range(0, 180, 2):
        clock.now = 100.0 + second
        said.append(limiter.allow('poll'))
    # Once at 0 s, 60 s and 120 s: three times in three minutes, however outcomes alternate.
    assert said.count(True) == 3
    assert limiter.take_suppressed('poll') == len(said) - 3


def test_approval_gate_backs_off_and_says_it_once_a_minute(clock):
    gate = ApprovalGate(base=1.0, cap=8.0, clock=clock)
    outcomes = []
    for dummy in range(5):
        assert gate.ready()
        # 410 too: every failed approval backs off, not only throttling.
        outcomes.append(gate.failed(http_error(410 if len(outcomes) % 2 else 500)))
        clock.now += outcomes[-1][0]
    assert [delay for delay, dummy in outcomes] == [1.0, 2.0, 4.0, 8.0, 8.0]
    assert [say for dummy, say in outcomes] == [True, False, False, False, False]
    gate.succeeded()
    assert gate.ready()


# --- identity ---------------------------------------------------------------

def test_identity_unknown_means_possibly_ours(clock):
    identity = Identity(clock=clock)
    event = parse_document(document(1, FREEZE))['events'][0]
    assert identity.affects(event) is None
    annotated = identity.annotate(event)
    assert annotated['affects_this_vm'] is None and annotated['is_leader'] is None
    identity.name = 'vm1'
    assert identity.affects(event) is True
    assert identity.annotate(event)['is_leader'] is False


def test_identity_is_asked_on_every_poll_until_known_then_never(clock):
    client = FakeClient(clock, documents=[document(1)] * 4,
                        identities=[http_error(500), http_error(410), {'name': 'vm1'}])
    poller = Poller(client, poll_interval=1.0, clock=clock)
    lookups = []
    for dummy in range(4):
        result = poller.poll()
        assert result.ok
        lookups.append(sum(1 for kind, dummy in client.calls if kind == 'compute'))
        clock.now += result.delay
    # Each failure backs off (1 s, then 2 s): the 410 keeps the third poll from asking.
    assert lookups == [1, 2, 2, 3]
    assert poller.identity.name == 'vm1' and poller.identity.source == 'imds'
    # Every lookup had a short deadline: a 410 cannot hold the loop for 70 s.
    assert all(deadline is not None and deadline - 100.0 <= 20.0 for kind, deadline in client.calls
               if kind == 'compute')


def test_a_failing_lookup_comes_after_the_events_and_backs_off_whatever_the_failure(clock):
    client = FakeClient(clock, documents=[document(1)] * 8, identities=[ImdsTimeoutError('slow')] * 8)
    poller = Poller(client, poll_interval=1.0, clock=clock)
    asked_at = []
    for dummy in range(8):
        calls = len(client.calls)
        assert poller.poll().ok
        kinds = [kind for kind, dummy in client.calls[calls:]]
        # The events are read first in every poll, whatever the lookup does.
        assert kinds[0] == 'events', kinds
        if 'compute' in kinds:
            asked_at.append(clock.now)
        clock.now += 1.0
    # Asked after 1, 2, 4 s, then at most every 5 s: never at the beat.
    assert [round(later - earlier) for earlier, later in zip(asked_at, asked_at[1:])] == [1, 2, 4]


def test_identity_failures_are_said_once_and_say_what_it_means(clock):
    client = FakeClient(clock, documents=[document(1)] * 3, identities=[http_error(500)] * 3)
    poller = Poller(client, poll_interval=1.0, clock=clock)
    said = []
    for dummy in range(3):
        result = poller.poll()
        said.extend(text for level, text in result.messages if 'not known yet' in text)
        clock.now += 10
    assert len(said) == 1
    assert 'possibly' in said[0] and 'approval waits' in said[0]


def test_a_given_resource_name_is_never_looked_up(clock):
    client = FakeClient(clock, documents=[document(1)])
    poller = Poller(client, resource_name='vm0', clock=clock)
    assert poller.poll().ok
    assert [kind for kind, dummy in client.calls] == ['events']


# --- polling ----------------------------------------------------------------

def test_failed_polls_back_off_and_recover(clock):
    client = FakeClient(clock, documents=[http_error(429, retry_after=3.0), http_error(500), document(1)])
    poller = Poller(client, poll_interval=1.0, resource_name='vm0', clock=clock)
    delays, messages = [], []
    for dummy in range(3):
        result = poller.poll()
        delays.append(result.delay)
        messages.extend(text for dummy, text in result.messages)
    assert delays == [3.0, 2.0, 1.0]
    assert len([text for text in messages if 'failed' in text and 'in a row' in text]) == 1
    assert any('answer again after 2 failed' in text for text in messages)


def test_backoff_never_exceeds_the_cap_or_the_poll_interval_if_longer(clock):
    client = FakeClient(clock, documents=[http_error(503)] * 12)
    poller = Poller(client, poll_interval=1.0, resource_name='vm0', clock=clock)
    assert max(poller.poll().delay for dummy in range(12)) == MAX_POLL_BACKOFF_SECONDS
    client = FakeClient(clock, documents=[http_error(503)] * 3)
    slow = Poller(client, poll_interval=30.0, resource_name='vm0', clock=clock)
    assert [slow.poll().delay for dummy in range(3)] == [30.0, 30.0, 30.0]


def test_a_cancelled_read_is_no_failure(clock):
    client = FakeClient(clock, documents=[RequestCancelledError('stopping')])
    poller = Poller(client, resource_name='vm0', clock=clock)
    result = poller.poll()
    assert isinstance(result.error, RequestCancelledError) and result.delay == 0.0
    assert poller.backoff.failures == 0


def test_the_first_read_gets_the_client_deadline_later_reads_a_short_one(clock):
    client = FakeClient(clock, documents=[document(1), document(1)])
    client.first_call_pending = True
    poller = Poller(client, poll_interval=1.0, resource_name='vm0', clock=clock)
    poller.poll()
    client.first_call_pending = False
    poller.poll()
    assert [deadline for dummy, deadline in client.calls] == [None, 100.0 + client.timeout]


def test_changes_are_tracked_and_warnings_said_once_per_document(clock):
    odd = dict(FREEZE, NotBefore='whenever')
    client = FakeClient(clock, documents=[document(1, odd), document(1, odd), document(2, started(odd)),
                                          document(3)])
    poller = Poller(client, resource_name='vm0', clock=clock)
    kinds, warnings = [], []
    for dummy in range(4):
        result = poller.poll()
        kinds.append([kind for kind, dummy, dummy in result.changes.items])
        warnings.append([text for level, text in result.messages if level == 'warning'])
    assert kinds == [[CHANGE_NEW], [], [CHANGE_STARTED], [CHANGE_REMOVED]]
    assert len(warnings[0]) == 1 and warnings[1] == []


@pytest.mark.parametrize('previous, current, expected_kinds, reset', [
    ([], [FREEZE], [CHANGE_NEW], None),
    ([FREEZE], [dict(FREEZE, NotBefore='Mon, 11 Apr 2022 23:00:00 GMT')], [CHANGE_CHANGED], None),
    ([FREEZE], [started(FREEZE)], [CHANGE_STARTED], None),
    ([FREEZE], [], [CHANGE_REMOVED], None),
    # Ids compared without case: no change.
    ([FREEZE], [dict(FREEZE, EventId=FREEZE['EventId'].lower())], [], None),
])
def test_track_changes(previous, current, expected_kinds, reset):
    before = parse_document(document(5, *previous))['events']
    after = parse_document(document(6, *current))
    changes = track_changes(before, 5, after)
    assert [kind for kind, dummy, dummy in changes.items] == expected_kinds
    assert changes.incarnation_reset == reset and changes.incarnation_changed


def test_incarnation_reset_is_detected_and_said(clock):
    client = FakeClient(clock, documents=[document(7, FREEZE), document(1, FREEZE)])
    poller = Poller(client, resource_name='vm0', clock=clock)
    poller.poll()
    result = poller.poll()
    assert result.changes.incarnation_reset == (7, 1)
    assert result.changes.items == []
    assert 'went back from 7 to 1' in incarnation_reset_message(result.changes.incarnation_reset)
