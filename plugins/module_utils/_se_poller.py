# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The poller every long-running consumer shares. Internal use only.

The hook daemon and the EDA source both poll IMDS for days. What they must
get right is the same, so it is written here once:

- between polls, a capped backoff after failures that honours Retry-After;
- this VM's identity, asked for again on every poll (with its own backoff)
  until IMDS tells it; until then every event is *possibly ours*:
  ``affects_this_vm`` is None, preparing may go ahead, approving must wait;
- change tracking on top of ``diff_events`` (new, started, changed,
  removed), with the incarnation reset of a VM whose Scheduled Events were
  disabled after 24 hours without requests;
- messages that repeat (a failing IMDS, a failing approval) said once, then
  at most once per interval, however successes and failures alternate.

Nothing here sleeps or logs: ``Poller.poll`` does one round of I/O through
the client and returns what happened, the delay until the next round and
the messages to log; the consumer sleeps and logs in its own idiom.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ._se_errors import ImdsHttpError, RequestCancelledError, ScheduledEventsError
from ._se_identity import SOURCE_IMDS, SOURCE_OPTION, get_compute, resource_name_from_compute
from ._se_select import affects, annotate_event, became_started, diff_events
from ._se_wait import validate_poll_interval

# A failing IMDS is polled at most this far apart (unless poll_interval is
# longer): a Spot eviction gives 30 s of notice, so backing off further could
# miss one entirely.
MAX_POLL_BACKOFF_SECONDS = 10.0
# The identity lookup is retried at least this often while unknown: events of
# this VM cannot be approved before it is known.
MAX_IDENTITY_BACKOFF_SECONDS = 5.0
# A failed approval is tried again after a backoff up to this: long enough not
# to hammer an IMDS that refuses, short enough for a 30 s notice.
MAX_APPROVAL_BACKOFF_SECONDS = 8.0
# A repeated message is said once, then at most this often.
REPEAT_LOG_SECONDS = 60.0

LEVEL_INFO = 'info'
LEVEL_WARNING = 'warning'
LEVEL_ERROR = 'error'


def _backs_off(exc):
    """True for failures that ask for less traffic: throttling and server errors."""
    return isinstance(exc, ImdsHttpError) and exc.status is not None and (exc.status == 429 or exc.status >= 500)


class Backoff(object):
    """When to try again after consecutive failures.

    After a success: at once (``ready``). After the n-th failure in a row:
    ``base * 2 ** (n - 1)`` capped at ``cap``, for failures that ask for less
    traffic (429, 5xx), or for every failure with ``escalate_all``; ``base``
    for the others. A Retry-After is honoured, within ``cap``.
    """

    def __init__(self, base, cap, clock=time.monotonic, escalate_all=False):
        self.base = float(base)
        self.cap = max(float(cap), self.base)
        self.clock = clock
        self.escalate_all = escalate_all
        self.failures = 0
        self.not_before = None

    def failed(self, exc=None):
        """Record a failure; return the delay before the next try."""
        self.failures += 1
        delay = self.base
        if exc is None or self.escalate_all or _backs_off(exc):
            delay = min(self.cap, self.base * (2 ** min(self.failures - 1, 16)))
        retry_after = getattr(exc, 'retry_after', None)
        if retry_after is not None:
            delay = min(self.cap, max(delay, retry_after))
        self.not_before = self.clock() + delay
        return delay

    def succeeded(self):
        self.failures = 0
        self.not_before = None

    def ready(self):
        return self.not_before is None or self.clock() >= self.not_before

    def wait_left(self):
        """Seconds until ``ready`` (0 when ready)."""
        return 0.0 if self.not_before is None else max(0.0, self.not_before - self.clock())


class RepeatLimiter(object):
    """Whether a repeated message may be said now: the first time, then once per ``interval`` per key.

    Successes in between do not reset it, so alternating outcomes cannot
    turn "once a minute" into "every time".
    """

    def __init__(self, interval=REPEAT_LOG_SECONDS, clock=time.monotonic):
        self.interval = interval
        self.clock = clock
        self.said_at = {}
        self.suppressed = {}

    def allow(self, key):
        now = self.clock()
        last = self.said_at.get(key)
        if last is not None and now - last < self.interval:
            self.suppressed[key] = self.suppressed.get(key, 0) + 1
            return False
        self.said_at[key] = now
        return True

    def take_suppressed(self, key):
        """How many times ``key`` was held back since it was last said (and reset that count)."""
        return self.suppressed.pop(key, 0)


class Identity(object):
    """This VM's name in Scheduled Events: given, or learnt from IMDS; never guessed.

    ``name`` is None until known. ``lookup`` asks IMDS (one attempt within
    the deadline given) when ``due``; failures back off, bounded.
    """

    def __init__(self, override=None, base=1.0, cap=MAX_IDENTITY_BACKOFF_SECONDS, clock=time.monotonic):
        self.name = override or None
        self.source = SOURCE_OPTION if override else None
        # Every failure backs off, a time-out or a 404 as much as a 429: the
        # lookup is not the beat (the events are), and a path that keeps
        # failing would otherwise be asked at the poll interval for ever.
        self.backoff = Backoff(base, cap, clock, escalate_all=True)
        self.last_error = None

    @property
    def known(self):
        return self.name is not None

    def due(self):
        return not self.known and self.backoff.ready()

    def lookup(self, client, deadline=None):
        """Ask IMDS once; return the messages ``[(level, key, text)]`` to log."""
        try:
            name = resource_name_from_compute(get_compute(client, deadline=deadline))
        except RequestCancelledError:
            raise
        except ScheduledEventsError as exc:
            delay = self.backoff.failed(exc)
            self.last_error = exc
            return [(LEVEL_WARNING, 'identity', 'this VM\'s name is not known yet (%s); asking IMDS again in %.1f s. '
                     'Until then every event counts as possibly this VM\'s: prepare hooks may run, approval waits. '
                     'Set resource_name to skip the lookup.' % (exc.message, delay))]
        self.backoff.succeeded()
        self.name, self.source, self.last_error = name, SOURCE_IMDS, None
        return [(LEVEL_INFO, None, 'this VM is %s in Scheduled Events (from IMDS)' % name)]

    def affects(self, event):
        """True or False once the name is known; None (possibly ours) before."""
        return affects(event, self.name) if self.known else None

    def annotate(self, event, now=None):
        """``annotate_event`` for this VM; ``affects_this_vm`` and ``is_leader`` are None while the name is unknown."""
        return annotate_for_identity(event, self.name, now)


def annotate_for_identity(event, resource_name, now=None):
    """``annotate_event`` for the VM ``resource_name``, or for a VM whose name is not known yet (None).

    Unknown is not "no": ``affects_this_vm`` and ``is_leader`` stay None
    (possibly this VM's event) until the name is known.
    """
    annotated = annotate_event(event, resource_name, now)
    if resource_name is None:
        annotated['affects_this_vm'] = None
        annotated['is_leader'] = None
    return annotated


CHANGE_NEW = 'new'
CHANGE_STARTED = 'started'
CHANGE_CHANGED = 'changed'
CHANGE_REMOVED = 'removed'
CHANGES = (CHANGE_NEW, CHANGE_STARTED, CHANGE_CHANGED, CHANGE_REMOVED)


class Changes(object):
    """What changed from one document to the next.

    ``items``: ``[(change, event, previous_or_None)]`` in the order new,
    started/changed, removed, each in document order. ``incarnation_reset``:
    ``(previous, current)`` when DocumentIncarnation went back (Scheduled
    Events were disabled and enabled again), else None.
    ``incarnation_changed``: the document's incarnation differs from the last.
    """

    __slots__ = ('items', 'incarnation_reset', 'incarnation_changed')

    def __init__(self, items, incarnation_reset, incarnation_changed):
        self.items = items
        self.incarnation_reset = incarnation_reset
        self.incarnation_changed = incarnation_changed


def track_changes(previous_events, previous_incarnation, normalized):
    """The Changes from ``previous_events`` (at ``previous_incarnation``) to the normalized document."""
    incarnation = normalized['document_incarnation']
    diff = diff_events(previous_events, normalized['events'])
    items = [(CHANGE_NEW, event, None) for event in diff['new']]
    for change in diff['changed']:
        kind = CHANGE_STARTED if became_started(change) else CHANGE_CHANGED
        items.append((kind, change['after'], change['before']))
    items.extend((CHANGE_REMOVED, event, None) for event in diff['removed'])
    reset = None
    if previous_incarnation is not None and incarnation < previous_incarnation:
        reset = (previous_incarnation, incarnation)
    return Changes(items, reset, incarnation != previous_incarnation)


def incarnation_reset_message(reset):
    """What to say about ``Changes.incarnation_reset`` (each consumer says it in its own channel)."""
    return ('DocumentIncarnation went back from %s to %s: Scheduled Events were disabled (24 hours without a request) '
            'and enabled again; events are followed by id, nothing is lost' % reset)


class PollResult(object):
    """One round of ``Poller.poll``.

    ``document`` (normalized) and ``raw`` when the read succeeded, else
    ``error``; ``changes`` (Changes, or None on error); ``delay`` seconds
    until the next poll should start (counted from this one's start);
    ``messages``: ``[(level, text)]`` to log now.
    """

    __slots__ = ('document', 'raw', 'changes', 'error', 'delay', 'messages')

    def __init__(self, document=None, raw=None, changes=None, error=None, delay=0.0, messages=None):
        self.document = document
        self.raw = raw
        self.changes = changes
        self.error = error
        self.delay = delay
        self.messages = messages or []

    @property
    def ok(self):
        return self.error is None


class Poller(object):
    """Reads one VM's Scheduled Events round after round.

    ``client`` is an ImdsClient (its ``timeout``, ``retries`` and
    ``deadline`` apply to each read). ``resource_name`` skips the identity
    lookup. ``clock`` is injectable for tests.
    """

    def __init__(self, client, poll_interval=1.0, resource_name=None, max_backoff=MAX_POLL_BACKOFF_SECONDS,
                 clock=time.monotonic, repeat_interval=REPEAT_LOG_SECONDS):
        self.client = client
        self.poll_interval = validate_poll_interval(poll_interval)
        self.clock = clock
        self.identity = Identity(resource_name, base=self.poll_interval,
                                 cap=max(self.poll_interval, MAX_IDENTITY_BACKOFF_SECONDS), clock=clock)
        self.backoff = Backoff(self.poll_interval, max(self.poll_interval, max_backoff), clock)
        self.repeats = RepeatLimiter(repeat_interval, clock)
        self.previous_events = []
        self.previous_incarnation = None
        self.polls_succeeded = 0

    def _say(self, messages, level, key, text):
        if key is None:
            messages.append((level, text))
        elif self.repeats.allow(key):
            held = self.repeats.take_suppressed(key)
            messages.append((level, text + (' (%d similar message(s) held back)' % held if held else '')))

    def quick_deadline(self):
        """The deadline of a request that must not hold the loop: identity lookups, approvals, later reads."""
        # Retries inside one read get at most a poll interval or a time-out:
        # the poller's own backoff takes over after that, and a 410 must not
        # hold the loop for the 70 s a one-shot request may spend on it.
        # In the client's clock: it compares the deadline with its own.
        return getattr(self.client, 'monotonic', self.clock)() + max(self.poll_interval, self.client.timeout)

    def _read_deadline(self):
        # The first read may take two minutes while IMDS enables Scheduled
        # Events; the client's own deadline bounds it.
        return None if self.client.first_call_pending else self.quick_deadline()

    def poll(self):
        """One round: the document, then the identity if due. Returns a PollResult.

        The events first: a slow or failing identity lookup must not delay
        reading them (a Preempt gives 30 s of notice), and the first request
        of all, the one that enables Scheduled Events, is the events'. The
        lookup still comes before the caller judges this round's events.
        """
        messages = []
        try:
            normalized, raw = self.client.get_document(deadline=self._read_deadline())
        except RequestCancelledError as exc:
            return PollResult(error=exc, delay=0.0, messages=messages)
        except ScheduledEventsError as exc:
            delay = self.backoff.failed(exc)
            self._say(messages, LEVEL_WARNING, 'poll', 'polling Scheduled Events failed (%d in a row; next try in '
                      '%.1f s): %s' % (self.backoff.failures, delay, exc.message))
            return PollResult(error=exc, delay=delay, messages=messages)
        if self.backoff.failures:
            messages.append((LEVEL_INFO, 'Scheduled Events answer again after %d failed poll(s)'
                             % self.backoff.failures))
        self.backoff.succeeded()
        if self.identity.due():
            try:
                for level, key, text in self.identity.lookup(self.client, deadline=self.quick_deadline()):
                    self._say(messages, level, key, text)
            except RequestCancelledError as exc:
                return PollResult(error=exc, delay=0.0, messages=messages)
        self.polls_succeeded += 1
        changes = track_changes(self.previous_events, self.previous_incarnation, normalized)
        if changes.incarnation_changed:
            # Warnings belong to a document; the same document says them once.
            for warning in normalized['warnings']:
                messages.append((LEVEL_WARNING, warning))
        self.previous_events = normalized['events']
        self.previous_incarnation = normalized['document_incarnation']
        return PollResult(document=normalized, raw=raw, changes=changes, delay=self.poll_interval, messages=messages)


class ApprovalGate(object):
    """Backoff and repeat-limited messages for approvals that fail, shared by pollers that approve.

    Every failed POST backs off (1, 2, 4, 8 s): unlike a read, which the
    beat needs, an approval repeated each poll only adds load to an IMDS
    that refuses it.
    """

    def __init__(self, base=1.0, cap=MAX_APPROVAL_BACKOFF_SECONDS, clock=time.monotonic,
                 repeat_interval=REPEAT_LOG_SECONDS):
        self.backoff = Backoff(base, max(base, cap), clock, escalate_all=True)
        self.repeats = RepeatLimiter(repeat_interval, clock)

    def ready(self):
        return self.backoff.ready()

    def failed(self, exc):
        """Record a failed POST; return ``(delay, say_it)``: when to try again and whether to log it now."""
        delay = self.backoff.failed(exc)
        return delay, self.repeats.allow('approval')

    def succeeded(self):
        self.backoff.succeeded()
