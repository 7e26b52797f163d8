# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the info module and the lookup report about a VM's events. Internal use only.

Both consumers read the document through ``fetch_info`` so that the module on
a managed node and the lookup on the controller describe the same document in
the same words: the normalized view ``{document_incarnation, resource_name,
events}`` with every event annotated for this VM, after the event filters.
The module adds its own keys (``this_vm_events``, ``maintenance_pending``,
``raw``) with ``module_result``; the wait conditions of ``wait_for`` live here
too because they are judged on that same view.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ._se_document import EVENT_SOURCES, EVENT_STATUSES, EVENT_TYPES
from ._se_errors import InvalidParameterError
from ._se_identity import SOURCE_HOSTNAME, resolve_resource_name
from ._se_select import affects, annotate_events, filter_events, is_pending
from ._se_wait import DEFAULT_POLL_INTERVAL, WaitTimeoutError, poll_until, validate_wait_timeout

WAIT_ANY_EVENT = 'any_event'
WAIT_THIS_VM_EVENT = 'this_vm_event'
WAIT_NO_THIS_VM_EVENTS = 'no_this_vm_events'
WAIT_INCARNATION_CHANGE = 'incarnation_change'
WAIT_CHOICES = (WAIT_ANY_EVENT, WAIT_THIS_VM_EVENT, WAIT_NO_THIS_VM_EVENTS, WAIT_INCARNATION_CHANGE)
# Waits whose answer depends on which VM this is.
_THIS_VM_WAITS = (WAIT_THIS_VM_EVENT, WAIT_NO_THIS_VM_EVENTS)

DEFAULT_WAIT_TIMEOUT = 300.0

# The filter options shared by the module and the lookup. No ``choices``:
# IMDS may add event types or statuses, and those must stay selectable.
EVENT_SELECTION_ARGUMENT_SPEC = {
    'event_types': {'type': 'list', 'elements': 'str'},
    'event_statuses': {'type': 'list', 'elements': 'str'},
    'event_sources': {'type': 'list', 'elements': 'str'},
}

WAIT_ARGUMENT_SPEC = {
    'wait_for': {'type': 'str', 'choices': list(WAIT_CHOICES)},
    'since_incarnation': {'type': 'int'},
    'wait_timeout': {'type': 'float', 'default': DEFAULT_WAIT_TIMEOUT},
    'poll_interval': {'type': 'float', 'default': DEFAULT_POLL_INTERVAL},
}

_KNOWN_VALUES = (
    ('event_types', 'EventType', EVENT_TYPES),
    ('event_statuses', 'EventStatus', EVENT_STATUSES),
    ('event_sources', 'EventSource', EVENT_SOURCES),
)

# How many events a timeout message lists before summarizing the rest.
_DESCRIBED_EVENTS = 5


class EventSelection(object):
    """The event filters of one request; an empty filter accepts everything."""

    def __init__(self, event_types=None, event_statuses=None, event_sources=None):
        self.event_types = list(event_types or [])
        self.event_statuses = list(event_statuses or [])
        self.event_sources = list(event_sources or [])

    @classmethod
    def from_options(cls, options):
        """Build from a mapping holding ``event_types``, ``event_statuses``, ``event_sources``."""
        return cls(options.get('event_types'), options.get('event_statuses'), options.get('event_sources'))

    def select(self, events):
        """The events matching every filter, in document order."""
        return filter_events(events, self.event_types, self.event_statuses, self.event_sources)

    def warnings(self):
        """One warning per filter value IMDS is not known to send (probably a typo)."""
        warnings = []
        for option, field, known in _KNOWN_VALUES:
            known_lower = [value.lower() for value in known]
            for value in getattr(self, option):
                if str(value).lower() not in known_lower:
                    warnings.append('%s value %r is not a known %s (%s); it only matches events whose %s is exactly '
                                    'that, ignoring case' % (option, value, field, ', '.join(known), field))
        return warnings


def build_view(normalized, resource_name, selection=None, now=None):
    """The normalized document as users see it: ``{document_incarnation, resource_name, events}``.

    ``events`` are the selected events, each annotated for ``resource_name``
    (``affects_this_vm``, ``leader``, ``is_leader``, ``seconds_until_not_before``).
    """
    events = normalized['events'] if selection is None else selection.select(normalized['events'])
    return {
        'document_incarnation': normalized['document_incarnation'],
        'resource_name': resource_name,
        'events': annotate_events(events, resource_name, now),
    }


def module_result(view, raw):
    """The info module's result keys for ``view``: adds ``this_vm_events``, ``maintenance_pending``, ``raw``."""
    result = dict(view)
    result['this_vm_events'] = [event for event in view['events'] if event['affects_this_vm']]
    result['maintenance_pending'] = any(is_pending(event) for event in result['this_vm_events'])
    if raw is not None:
        result['raw'] = raw
    return result


def wait_condition(wait_for, resource_name, selection=None, since_incarnation=None):
    """A predicate over a normalized document telling whether ``wait_for`` holds.

    Event conditions look at the selected events only, so that for example
    ``wait_for=this_vm_event`` with ``event_types=[Reboot]`` waits for a Reboot.
    ``incarnation_change`` holds once DocumentIncarnation differs from
    ``since_incarnation`` (not "is greater": it starts over when Azure
    disables Scheduled Events after 24 hours without requests); without
    ``since_incarnation`` the first document judged sets the baseline.
    """
    def selected(normalized):
        return normalized['events'] if selection is None else selection.select(normalized['events'])

    if wait_for == WAIT_ANY_EVENT:
        return lambda normalized: bool(selected(normalized))
    if wait_for == WAIT_THIS_VM_EVENT:
        return lambda normalized: any(affects(event, resource_name) for event in selected(normalized))
    if wait_for == WAIT_NO_THIS_VM_EVENTS:
        return lambda normalized: not any(affects(event, resource_name) for event in selected(normalized))
    if wait_for == WAIT_INCARNATION_CHANGE:
        return _IncarnationChange(since_incarnation)
    raise InvalidParameterError('wait_for must be one of %s, got %r' % (', '.join(WAIT_CHOICES), wait_for))


class _IncarnationChange(object):
    """Holds once DocumentIncarnation differs from a baseline, given or first seen."""

    def __init__(self, since_incarnation=None):
        self.baseline = since_incarnation

    def __call__(self, normalized):
        if self.baseline is None:
            self.baseline = normalized['document_incarnation']
            return False
        return normalized['document_incarnation'] != self.baseline


def _describe_event(event, resource_name):
    return '%s %s %s (Resources: %s%s)' % (
        event.get('event_type'), event.get('event_id'), event.get('event_status'),
        ', '.join(event.get('resources') or []) or 'none',
        '; affects %s' % resource_name if affects(event, resource_name) else '')


def describe_state(normalized, resource_name, selection=None):
    """A one-line account of a document for messages: incarnation and the selected events."""
    events = normalized['events'] if selection is None else selection.select(normalized['events'])
    mine = sum(1 for event in events if affects(event, resource_name))
    text = 'DocumentIncarnation %s, %d selected event(s), %d affecting %s' % (
        normalized['document_incarnation'], len(events), mine, resource_name)
    if events:
        described = [_describe_event(event, resource_name) for event in events[:_DESCRIBED_EVENTS]]
        if len(events) > _DESCRIBED_EVENTS:
            described.append('and %d more' % (len(events) - _DESCRIBED_EVENTS))
        text += ': ' + '; '.join(described)
    return text


class InfoWaitTimeoutError(WaitTimeoutError):
    """A ``wait_for`` timed out. ``last_view`` is the build_view of the last document seen, or None."""

    def __init__(self, message, last_document=None, last_error=None, waited=None, last_view=None):
        super(InfoWaitTimeoutError, self).__init__(message, last_document=last_document, last_error=last_error,
                                                   waited=waited)
        self.last_view = last_view


class InfoResult(object):
    """What ``fetch_info`` learned.

    ``view`` (see build_view), ``raw`` (the untouched document),
    ``resource_name_source`` (option, imds or hostname), ``warnings`` (list of
    str), and for waits ``waited`` (seconds) and ``polls``.
    """

    __slots__ = ('view', 'raw', 'resource_name_source', 'warnings', 'waited', 'polls')

    def __init__(self, view, raw, resource_name_source, warnings, waited=None, polls=None):
        self.view = view
        self.raw = raw
        self.resource_name_source = resource_name_source
        self.warnings = warnings
        self.waited = waited
        self.polls = polls


class _Identity(object):
    """This VM's name, learned once and only after the first events answer.

    The events request goes first on purpose: the first request of a VM
    enables Scheduled Events and may take two minutes, and only that request
    is given the long first-call timeout.
    """

    def __init__(self, client, override):
        self.client = client
        self.override = override
        self.name = None
        self.source = None
        self.warning = None

    def resolve(self, deadline=None):
        if self.name is None:
            self.name, self.source, self.warning = resolve_resource_name(self.client, self.override, deadline=deadline)
        return self.name

    @property
    def guessed(self):
        """Whether the name is the host name, taken because IMDS did not say (see resolve_resource_name)."""
        return self.source == SOURCE_HOSTNAME

    def resolve_for_wait(self, deadline):
        """The name, asked of IMDS again at each poll of a wait for as long as it is only a guess.

        One throttled or slow answer from the instance metadata must not
        decide a whole wait: a scale-set instance (``myScaleSet_3``) never
        has its host name in Resources.
        """
        if self.guessed:
            self.name = None
        return self.resolve(deadline)


def fetch_info(client, resource_name=None, selection=None, wait_for=None, since_incarnation=None,
               wait_timeout=DEFAULT_WAIT_TIMEOUT, poll_interval=DEFAULT_POLL_INTERVAL, now=None):
    """Read the events document (waiting for ``wait_for`` if given) and build the view.

    ``resource_name`` overrides discovery from the instance metadata.
    Raises ScheduledEventsError (InfoWaitTimeoutError when the wait timed
    out, its message naming the condition and the last state seen).
    """
    selection = selection or EventSelection()
    warnings = selection.warnings()
    identity = _Identity(client, resource_name)
    waited = polls = None
    if wait_for is None:
        normalized, raw = client.get_document()
        identity.resolve()
    else:
        if wait_for not in WAIT_CHOICES:
            raise InvalidParameterError('wait_for must be one of %s, got %r' % (', '.join(WAIT_CHOICES), wait_for))
        validate_wait_timeout(wait_timeout)
        deadline = client.monotonic() + wait_timeout
        conditions = {}

        def condition(normalized):
            # Built on first use (the name is only known after the first
            # answer), and again when a guessed name gives way to IMDS's.
            name = identity.resolve_for_wait(deadline) if wait_for in _THIS_VM_WAITS else identity.resolve(deadline)
            if conditions.get('name') != name or 'holds' not in conditions:
                conditions.update(name=name, holds=wait_condition(wait_for, name, selection, since_incarnation))
            if identity.guessed and wait_for == WAIT_NO_THIS_VM_EVENTS:
                # A guessed name matches nothing in Resources: "none of this
                # VM's events left" would hold while its Reboot is pending.
                return False
            return conditions['holds'](normalized)

        def describe(normalized):
            text = describe_state(normalized, identity.resolve(deadline), selection)
            if identity.guessed:
                text += ' (this VM\'s name is only a guess: %s)' % identity.warning
            return text

        try:
            normalized, raw, waited, polls = poll_until(client, condition, wait_timeout, poll_interval, describe)
        except WaitTimeoutError as exc:
            baseline = getattr(conditions.get('holds'), 'baseline', since_incarnation)
            last_view = None
            if exc.last_document is not None:
                last_view = build_view(exc.last_document, identity.resolve(), selection, now)
            raise InfoWaitTimeoutError('Timed out waiting for %s: %s' % (_describe_wait(wait_for, baseline), exc.message),
                                       last_document=exc.last_document, last_error=exc.last_error, waited=exc.waited,
                                       last_view=last_view)
    for warning in (identity.warning,) + tuple(normalized.get('warnings') or ()):
        if warning:
            warnings.append(warning)
    view = build_view(normalized, identity.name, selection, now)
    return InfoResult(view, raw, identity.source, warnings, waited, polls)


def _describe_wait(wait_for, baseline):
    if wait_for == WAIT_INCARNATION_CHANGE:
        return 'DocumentIncarnation to change from %s' % ('the first one seen' if baseline is None else baseline)
    return {
        WAIT_ANY_EVENT: 'any selected event',
        WAIT_THIS_VM_EVENT: 'a selected event affecting this VM',
        WAIT_NO_THIS_VM_EVENTS: 'no selected event affecting this VM',
    }.get(wait_for, wait_for)
