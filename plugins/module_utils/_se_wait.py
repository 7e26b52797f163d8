# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Polling IMDS until a condition holds. Internal use only.

Shared by every "wait for" option so they all poll the same way: within the
IMDS throttle, through passing faults (a Freeze can stall IMDS for seconds),
and with a timeout message that names the last state seen.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ._se_errors import InvalidParameterError, ScheduledEventsError

# IMDS throttles at about 5 requests per second per VM, for all paths together
# and all clients on the VM (the hook service polls too). Four per second at
# most leaves room for the others.
MIN_POLL_INTERVAL = 0.25
DEFAULT_POLL_INTERVAL = 1.0


class WaitTimeoutError(ScheduledEventsError):
    """The condition did not hold in time. ``last_document`` is the last normalized document seen (or None)."""

    def __init__(self, message, last_document=None, last_error=None, waited=None):
        super(WaitTimeoutError, self).__init__(message)
        self.last_document = last_document
        self.last_error = last_error
        self.waited = waited


def validate_poll_interval(poll_interval):
    """Return ``poll_interval`` or raise InvalidParameterError if IMDS would throttle it."""
    if poll_interval is None:
        return DEFAULT_POLL_INTERVAL
    if not poll_interval >= MIN_POLL_INTERVAL:   # also refuses NaN, which compares false with everything
        raise InvalidParameterError('poll_interval %s s would exceed the IMDS throttle of about 5 requests per second '
                                    'shared by every client on the VM; use %s s or more'
                                    % (poll_interval, MIN_POLL_INTERVAL))
    return float(poll_interval)


def validate_wait_timeout(wait_timeout):
    """Return ``wait_timeout`` or raise InvalidParameterError unless it is a finite number of seconds, 0 or more."""
    if wait_timeout is None or isinstance(wait_timeout, bool) or not 0 <= wait_timeout < float('inf'):
        # ``not 0 <= x`` also refuses NaN, which compares false with everything.
        raise InvalidParameterError('wait_timeout must be 0 or more seconds, got %r' % (wait_timeout,))
    return wait_timeout


def poll_until(client, condition, wait_timeout, poll_interval=DEFAULT_POLL_INTERVAL, describe=None):
    """Poll the events document until ``condition(normalized)`` is true.

    Returns ``(normalized, raw, waited_seconds, polls)``. The first poll
    happens at once, so a condition that already holds costs one request.
    Errors that retrying may cure (see ScheduledEventsError.retryable) do not
    end the wait; others are raised at once. On timeout raises
    WaitTimeoutError whose message includes ``describe(last_normalized)``.
    """
    poll_interval = validate_poll_interval(poll_interval)
    validate_wait_timeout(wait_timeout)
    started = client.monotonic()
    deadline = started + wait_timeout
    last_document, last_error, polls = None, None, 0
    while True:
        poll_started = client.monotonic()
        polls += 1
        try:
            normalized, raw = client.get_document(deadline=deadline)
            last_document, last_error = normalized, None
            if condition(normalized):
                return normalized, raw, client.monotonic() - started, polls
        except ScheduledEventsError as exc:
            if not exc.retryable:
                raise
            last_error = exc
        now = client.monotonic()
        if now >= deadline:
            break
        client.sleep(max(0.0, min(poll_interval - (now - poll_started), deadline - now)))
    waited = client.monotonic() - started
    if last_document is not None and describe is not None:
        state = describe(last_document)
    elif last_document is not None:
        state = 'DocumentIncarnation %s with %d event(s)' % (
            last_document['document_incarnation'], len(last_document['events']))
    else:
        state = 'no document could be read'
    if last_error is not None:
        state += '; last error: %s' % last_error.message
    raise WaitTimeoutError('Condition not met after waiting %.1f s (%d polls). Last state seen: %s'
                           % (waited, polls, state), last_document=last_document, last_error=last_error, waited=waited)
