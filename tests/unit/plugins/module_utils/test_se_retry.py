# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""RetryPolicy decisions, with the jitter pinned."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_retry import (
    GONE_RETRY_BUDGET_SECONDS,
    RetryPolicy,
)


def pinned(value):
    return lambda: value


def no_jitter_policy(**kwargs):
    kwargs.setdefault('random_func', pinned(0.0))
    return RetryPolicy(**kwargs)


@pytest.mark.parametrize('status', [400, 401, 403, 404, 405, 406, 411, 413, 414, 415, 418, 422])
def test_request_errors_are_never_retried(status):
    decision = no_jitter_policy(retries=5).decide(1, 0.0, status=status)
    assert not decision.retry
    assert decision.delay == 0.0
    assert 'HTTP %d is not retried' % status in decision.reason


@pytest.mark.parametrize('status', [429, 500, 502, 503, 504, 408])
def test_retryable_statuses_retry_up_to_retries(status):
    policy = no_jitter_policy(retries=3)
    decisions = [policy.decide(attempt, 0.0, status=status) for attempt in (1, 2, 3, 4)]
    assert [decision.retry for decision in decisions] == [True, True, True, False]
    assert 'HTTP %d after 4 attempts; giving up' % status == decisions[-1].reason


@pytest.mark.parametrize('failure', ['connection failure', 'timeout', 'malformed document'])
def test_failures_without_answer_retry_up_to_retries(failure):
    policy = no_jitter_policy(retries=2)
    assert policy.decide(1, 0.0, failure=failure).retry
    assert policy.decide(2, 0.0, failure=failure).reason == failure
    final = policy.decide(3, 0.0, failure=failure)
    assert not final.retry
    assert final.reason == '%s after 3 attempts; giving up' % failure


def test_zero_retries_means_one_attempt():
    policy = no_jitter_policy(retries=0)
    assert not policy.decide(1, 0.0, status=500).retry
    assert not policy.decide(1, 0.0, failure='timeout').retry


def test_gone_is_not_retried_when_retries_are_off():
    # A poller polls again itself; one request must not hold it for 70 s.
    decision = no_jitter_policy(retries=0).decide(1, 0.0, status=410)
    assert not decision.retry and 'retries are off' in decision.reason


def test_gone_is_retried_by_time_not_by_count():
    policy = no_jitter_policy(retries=1)
    assert GONE_RETRY_BUDGET_SECONDS == 70.0
    assert policy.decide(50, 60.0, status=410).retry
    decision = policy.decide(2, 69.5, status=410)
    assert not decision.retry
    assert '410 persisted for 70 s' in decision.reason


def test_gone_stops_when_the_next_delay_would_pass_the_budget():
    policy = no_jitter_policy(retries=5, base_delay=0.5, max_delay=8.0)
    # The 5th retry waits 8 s: from 62 s that ends exactly at 70 s, from 62.5 s past it.
    assert policy.decide(5, 62.0, status=410).retry
    assert not policy.decide(5, 62.5, status=410).retry


def test_gone_retries_for_about_seventy_seconds_in_total():
    policy = no_jitter_policy(retries=5)
    elapsed, attempt = 0.0, 0
    for dummy in range(100):
        attempt += 1
        decision = policy.decide(attempt, elapsed, status=410)
        if not decision.retry:
            break
        elapsed += decision.delay
    else:
        pytest.fail('410 was retried forever')
    assert 60.0 <= elapsed <= 70.0
    assert attempt > 5


def test_backoff_doubles_and_is_capped():
    policy = no_jitter_policy(base_delay=0.5, max_delay=8.0)
    assert [policy.backoff(attempt) for attempt in range(1, 8)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    assert policy.backoff(0) == 0.5


def test_backoff_of_huge_attempt_counts_stays_capped():
    assert no_jitter_policy(base_delay=0.5, max_delay=8.0).backoff(5000) == 8.0
    assert no_jitter_policy(base_delay=0.0, max_delay=0.0).backoff(5000) == 0.0


@pytest.mark.parametrize('drawn, expected', [(0.0, 4.0), (0.5, 3.5), (0.999999, 3.000001)])
def test_jitter_shortens_by_at_most_the_jitter_fraction(drawn, expected):
    policy = RetryPolicy(base_delay=0.5, max_delay=8.0, jitter=0.25, random_func=pinned(drawn))
    assert policy.backoff(4) == pytest.approx(expected)


def test_jitter_bounds_hold_for_any_draw():
    draws = [index / 50.0 for index in range(50)]
    for attempt in range(1, 10):
        for drawn in draws:
            delay = RetryPolicy(jitter=0.25, random_func=pinned(drawn)).backoff(attempt)
            ceiling = min(8.0, 0.5 * 2 ** (attempt - 1))
            assert 0.75 * ceiling <= delay <= ceiling


def test_default_random_source_is_used_when_none_injected():
    policy = RetryPolicy(jitter=0.25)
    delays = [policy.backoff(1) for dummy in range(20)]
    assert all(0.375 <= delay <= 0.5 for delay in delays)


def test_retry_after_lengthens_the_delay_but_stays_capped():
    policy = no_jitter_policy(retries=5, base_delay=0.5, max_delay=8.0)
    assert policy.decide(1, 0.0, status=429, retry_after=3.0).delay == 3.0
    assert policy.decide(1, 0.0, status=429, retry_after=120.0).delay == 8.0
    # A Retry-After shorter than the backoff does not shorten it.
    assert policy.decide(3, 0.0, status=429, retry_after=0.1).delay == 2.0
    assert policy.decide(1, 0.0, status=429, retry_after=-5.0).delay == 0.5


def test_remaining_time_limits_retries():
    policy = no_jitter_policy(retries=5)
    assert policy.decide(1, 0.0, status=500, remaining=1.0).retry
    decision = policy.decide(3, 0.0, status=500, remaining=1.0)
    assert not decision.retry
    assert decision.reason == 'HTTP 500 and no time left to retry'
    assert not policy.decide(1, 0.0, status=410, remaining=0.1).retry
    assert not policy.decide(1, 0.0, failure='timeout', remaining=0.1).retry


def test_no_retry_once_the_deadline_has_passed_even_without_delay():
    policy = no_jitter_policy(retries=5, base_delay=0.0, max_delay=0.0)
    assert policy.decide(1, 0.0, status=500, remaining=1.0).retry
    assert not policy.decide(1, 0.0, status=500, remaining=0.0).retry
    assert not policy.decide(1, 0.0, status=500, remaining=-2.0).retry


@pytest.mark.parametrize('kwargs', [
    {'retries': -1}, {'base_delay': -0.1}, {'base_delay': 2.0, 'max_delay': 1.0}, {'jitter': 1.5}, {'jitter': -0.1},
])
def test_invalid_policies_are_refused(kwargs):
    with pytest.raises(ValueError):
        RetryPolicy(**kwargs)


def test_decision_repr_is_readable():
    text = repr(no_jitter_policy().decide(1, 0.0, status=500))
    assert text == "RetryDecision(retry=True, delay=0.500, reason='HTTP 500')"
