# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""poll_until on a fake clock."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_client import ImdsClient
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import (
    ImdsHttpError,
    ImdsTimeoutError,
    ImdsUnreachableError,
    InvalidParameterError,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_retry import RetryPolicy
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_select import find_event
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_wait import (
    DEFAULT_POLL_INTERVAL,
    MIN_POLL_INTERVAL,
    WaitTimeoutError,
    poll_until,
    validate_poll_interval,
)

FREEZE_ID = 'C7061BAC-AFDC-4513-B24B-AA5F13A16123'


@pytest.fixture
def westno_responses(fixture_bytes, response):
    def make(*incarnations):
        return [response(200, fixture_bytes('westno_incarnation_%d.json' % number)) for number in incarnations]
    return make


@pytest.fixture
def client_for(fake_clock, scripted_transport):
    def make(outcomes, seconds_per_request=0.0, retries=0):
        transport = scripted_transport(outcomes, clock=fake_clock, seconds_per_request=seconds_per_request)
        client = ImdsClient(transport=transport, sleep=fake_clock.sleep, monotonic=fake_clock.monotonic,
                            policy=RetryPolicy(retries=retries, random_func=lambda: 0.0))
        return client, transport
    return make


def freeze_started(normalized):
    event = find_event(normalized['events'], FREEZE_ID)
    return event is not None and event['event_status'] == 'Started'


def test_condition_already_true_costs_one_request(client_for, westno_responses, fake_clock):
    client, transport = client_for(westno_responses(3))
    normalized, raw, waited, polls = poll_until(client, freeze_started, wait_timeout=60)
    assert normalized['document_incarnation'] == 3
    assert raw['DocumentIncarnation'] == 3
    assert (waited, polls) == (0.0, 1)
    assert len(transport.calls) == 1
    assert fake_clock.sleeps == []


def test_condition_true_later(client_for, westno_responses, fake_clock):
    client, transport = client_for(westno_responses(1, 2, 2, 3), seconds_per_request=0.2)
    normalized, raw, waited, polls = poll_until(client, freeze_started, wait_timeout=60, poll_interval=1.0)
    assert normalized['document_incarnation'] == 3
    assert polls == 4
    # The time a request took counts towards the interval.
    assert fake_clock.sleeps == [pytest.approx(0.8)] * 3
    assert waited == pytest.approx(4 * 0.2 + 3 * 0.8)


def test_timeout_names_the_last_state(client_for, westno_responses, fake_clock):
    client, transport = client_for(westno_responses(*([2] * 20)))
    with pytest.raises(WaitTimeoutError) as caught:
        poll_until(client, freeze_started, wait_timeout=5, poll_interval=1.0)
    error = caught.value
    message = str(error)
    assert message.startswith('Condition not met after waiting 5.0 s (6 polls)')
    assert 'DocumentIncarnation 2 with 1 event(s)' in message
    assert error.last_document['document_incarnation'] == 2
    assert error.waited == 5.0
    assert error.last_error is None
    assert not error.retryable
    assert len(transport.calls) == 6


def test_timeout_uses_describe_for_the_state(client_for, westno_responses):
    client, dummy = client_for(westno_responses(*([2] * 5)))

    def describe(normalized):
        return 'event %s is %s' % (FREEZE_ID, normalized['events'][0]['event_status'])

    with pytest.raises(WaitTimeoutError, match='Last state seen: event %s is Scheduled' % FREEZE_ID):
        poll_until(client, freeze_started, wait_timeout=2, poll_interval=1.0, describe=describe)


def test_zero_wait_timeout_polls_once(client_for, westno_responses, fake_clock):
    client, transport = client_for(westno_responses(2))
    with pytest.raises(WaitTimeoutError, match='1 polls'):
        poll_until(client, freeze_started, wait_timeout=0)
    assert fake_clock.sleeps == []


def test_last_sleep_is_cut_to_the_deadline(client_for, westno_responses, fake_clock):
    client, dummy = client_for(westno_responses(*([2] * 5)))
    with pytest.raises(WaitTimeoutError):
        poll_until(client, freeze_started, wait_timeout=2.5, poll_interval=1.0)
    assert fake_clock.sleeps == [1.0, 1.0, 0.5]


def test_retryable_errors_do_not_end_the_wait(client_for, westno_responses, response, fake_clock):
    outcomes = ([ImdsUnreachableError('refused'), response(500, {'error': 'Internal'}), ImdsTimeoutError('slow'),
                 response(200, b'<html>not json</html>'), response(429, {'error': 'Too many requests'})]
                + westno_responses(3))
    client, transport = client_for(outcomes)
    normalized, raw, waited, polls = poll_until(client, freeze_started, wait_timeout=60, poll_interval=1.0)
    assert normalized['document_incarnation'] == 3
    assert polls == 6


def test_timeout_after_errors_reports_the_last_error(client_for, westno_responses, fake_clock):
    client, dummy = client_for(westno_responses(2) + [ImdsUnreachableError('connection refused')] * 10)
    with pytest.raises(WaitTimeoutError) as caught:
        poll_until(client, freeze_started, wait_timeout=3, poll_interval=1.0)
    message = str(caught.value)
    assert 'DocumentIncarnation 2' in message
    assert 'last error: IMDS unreachable' in message and 'connection refused' in message
    assert isinstance(caught.value.last_error, ImdsUnreachableError)


def test_timeout_without_any_document(client_for, fake_clock):
    client, dummy = client_for([ImdsUnreachableError('refused')] * 10)
    with pytest.raises(WaitTimeoutError, match='no document could be read; last error: IMDS unreachable'):
        poll_until(client, freeze_started, wait_timeout=2, poll_interval=1.0)


@pytest.mark.parametrize('status', [400, 404, 405])
def test_errors_retrying_cannot_cure_end_the_wait_at_once(client_for, westno_responses, response, status):
    client, transport = client_for(westno_responses(2) + [response(status, {'error': 'no'})] + westno_responses(3))
    with pytest.raises(ImdsHttpError) as caught:
        poll_until(client, freeze_started, wait_timeout=60, poll_interval=1.0)
    assert caught.value.status == status
    assert len(transport.calls) == 2


def test_request_retries_stop_at_the_wait_deadline(client_for, response, fake_clock):
    # With retries allowed, a 500 storm must still not outlive the wait.
    client, transport = client_for([response(500, {})] * 50, retries=20)
    with pytest.raises(WaitTimeoutError):
        poll_until(client, freeze_started, wait_timeout=3, poll_interval=1.0)
    assert fake_clock.now - 1000.0 <= 3.0 + 1e-9


def test_condition_errors_propagate(client_for, westno_responses):
    client, dummy = client_for(westno_responses(2))

    def broken(normalized):
        raise KeyError('bug in condition')
    with pytest.raises(KeyError):
        poll_until(client, broken, wait_timeout=5)


@pytest.mark.parametrize('interval', [0.0, 0.1, 0.24, -1, float('nan')])
def test_poll_interval_below_the_throttle_is_refused(client_for, interval):
    client, transport = client_for([])
    with pytest.raises(InvalidParameterError, match='IMDS throttle of about 5 requests per second'):
        poll_until(client, freeze_started, wait_timeout=5, poll_interval=interval)
    assert transport.calls == []


@pytest.mark.parametrize('wait_timeout', [-1, None, float('nan'), float('inf')])
def test_bad_wait_timeout_is_refused(client_for, wait_timeout):
    client, transport = client_for([])
    with pytest.raises(InvalidParameterError, match='wait_timeout must be 0 or more'):
        poll_until(client, freeze_started, wait_timeout=wait_timeout)
    assert transport.calls == []


def test_validate_poll_interval():
    assert MIN_POLL_INTERVAL == 0.25 and DEFAULT_POLL_INTERVAL == 1.0
    assert validate_poll_interval(None) == DEFAULT_POLL_INTERVAL
    assert validate_poll_interval(0.25) == 0.25
    assert validate_poll_interval(2) == 2.0
    assert isinstance(validate_poll_interval(2), float)
