# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""When to try an IMDS request again, as a pure decision. Internal use only.

Kept apart from the transport so the policy is tested without a network and
shared by every caller, whatever HTTP library it uses.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import email.utils
import math
import random
import time

# IMDS documents 410 as "retry for up to about 70 seconds".
GONE_RETRY_BUDGET_SECONDS = 70.0

# Answers that no retry can change: the request itself is wrong.
_NEVER_RETRY = frozenset((400, 401, 403, 404, 405, 406, 411, 413, 414, 415))


# Retry-After is the server's wish, not a command: a broken or hostile answer
# asking for an hour must not stop a poller that has 30 s to see a Spot
# eviction. Callers bound it further with their own caps.
MAX_RETRY_AFTER_SECONDS = 60.0


def retry_after_seconds(value, now=None):
    """Seconds asked for by a Retry-After header value (delta-seconds or HTTP-date), bounded; None if unusable."""
    if value is None:
        return None
    text = str(value).strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if math.isnan(seconds) or math.isinf(seconds):
        return None
    return min(max(0.0, seconds), MAX_RETRY_AFTER_SECONDS)


class RetryDecision(object):
    """Outcome of RetryPolicy.decide: ``retry`` (bool), ``delay`` (seconds), ``reason``."""

    __slots__ = ('retry', 'delay', 'reason')

    def __init__(self, retry, delay, reason):
        self.retry = retry
        self.delay = delay
        self.reason = reason

    def __repr__(self):
        return 'RetryDecision(retry=%r, delay=%.3f, reason=%r)' % (self.retry, self.delay, self.reason)


class RetryPolicy(object):
    """Capped exponential backoff with jitter.

    ``retries`` bounds the retries of throttling (429), server errors (5xx),
    connection failures and malformed answers. 410 is bounded by time instead
    (``gone_budget`` seconds since the first attempt), as IMDS asks, but only
    when retries are on at all: a poller that asked for no retries polls again
    itself and must not be held for 70 s by one request.
    ``random_func`` is injectable so tests can pin the jitter.
    """

    def __init__(self, retries=5, base_delay=0.5, max_delay=8.0, gone_budget=GONE_RETRY_BUDGET_SECONDS,
                 jitter=0.25, random_func=None):
        if retries < 0:
            raise ValueError('retries must be 0 or more')
        if base_delay < 0 or max_delay < base_delay:
            raise ValueError('delays must satisfy 0 <= base_delay <= max_delay')
        if not 0 <= jitter <= 1:
            raise ValueError('jitter must be between 0 and 1')
        self.retries = retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.gone_budget = gone_budget
        self.jitter = jitter
        self.random_func = random_func or random.random

    def backoff(self, attempt):
        """Delay before retry number ``attempt`` (1 for the first retry)."""
        # The exponent is capped because max_delay is reached long before,
        # and 2 ** 1100 no longer converts to a float.
        ceiling = min(self.max_delay, self.base_delay * (2 ** min(max(0, attempt - 1), 32)))
        # Jitter spreads the retries of many VMs hit by the same IMDS hiccup.
        return ceiling * (1.0 - self.jitter * self.random_func())

    def decide(self, attempt, elapsed, status=None, failure=None, retry_after=None, remaining=None):
        """Decide whether to retry after a failed attempt.

        ``attempt``: how many attempts were made so far (1 after the first).
        ``elapsed``: seconds since the first attempt started.
        ``status``: the HTTP status, or None when there was no HTTP answer.
        ``failure``: for no HTTP answer, a short word (``connection``,
        ``timeout``, ``malformed``) used in the reason.
        ``retry_after``: seconds from a Retry-After header, if any.
        ``remaining``: seconds the caller may still spend (a wait deadline);
        a delay that would overrun it means no retry.
        """
        if status is not None and (status in _NEVER_RETRY or (400 <= status < 500 and status not in (408, 410, 429))):
            return RetryDecision(False, 0.0, 'HTTP %d is not retried: the request itself must change' % status)
        delay = self.backoff(attempt)
        if retry_after is not None and retry_after >= 0:
            delay = min(max(delay, float(retry_after)), self.max_delay)
        if status == 410:
            if self.retries == 0:
                return RetryDecision(False, 0.0, 'HTTP 410 and retries are off (the caller polls again)')
            if elapsed + delay > self.gone_budget:
                return RetryDecision(False, 0.0, 'HTTP 410 persisted for %.0f s, more than the %.0f s IMDS asks to retry for'
                                     % (elapsed, self.gone_budget))
            reason = 'HTTP 410 (retry for up to %.0f s)' % self.gone_budget
        else:
            if attempt > self.retries:
                what = ('HTTP %d' % status) if status is not None else (failure or 'failure')
                return RetryDecision(False, 0.0, '%s after %d attempts; giving up' % (what, attempt))
            reason = ('HTTP %d' % status) if status is not None else (failure or 'connection failure')
        if remaining is not None and (remaining <= 0 or delay > remaining):
            return RetryDecision(False, 0.0, '%s and no time left to retry' % reason)
        return RetryDecision(True, delay, reason)
