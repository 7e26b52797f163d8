# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Deciding which events to approve, and when an approval has taken effect. Internal use only.

Approving an event releases it for every VM in its Resources, not only the
caller, so the choice is made here once, as pure functions over normalized
events, and shared by the approve module, the hook service's approval policy
and the rolling-maintenance playbooks.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ._se_document import EVENT_SOURCES, EVENT_TYPES
from ._se_errors import InvalidParameterError
from ._se_select import affects, event_id_key, filter_events, find_event, is_approvable, is_event_id, is_leader

SCOPE_THIS_VM = 'this_vm'
SCOPE_ALL = 'all'
SCOPES = (SCOPE_THIS_VM, SCOPE_ALL)

MISSING_FAIL = 'fail'
MISSING_IGNORE = 'ignore'
MISSING_CHOICES = (MISSING_FAIL, MISSING_IGNORE)

# What to do with an event named by id that names a VM outside allowed_vms.
OUTSIDE_ALLOWED_FAIL = 'fail'
OUTSIDE_ALLOWED_SKIP = 'skip'
OUTSIDE_ALLOWED_CHOICES = (OUTSIDE_ALLOWED_FAIL, OUTSIDE_ALLOWED_SKIP)

WAIT_NONE = 'none'
WAIT_STARTED = 'started'
WAIT_COMPLETED = 'completed'
WAIT_CHOICES = (WAIT_NONE, WAIT_STARTED, WAIT_COMPLETED)

# Why a selected event is not approved. Stable strings: playbooks and the
# service's hooks test them.
SKIP_GONE = 'gone'
SKIP_NOT_THIS_VM = 'not_this_vm'
SKIP_NOT_LEADER = 'not_leader'
SKIP_ALREADY_STARTED = 'already_started'
SKIP_NOT_SCHEDULED = 'not_scheduled'
SKIP_REASONS = (SKIP_GONE, SKIP_NOT_THIS_VM, SKIP_NOT_LEADER, SKIP_ALREADY_STARTED, SKIP_NOT_SCHEDULED)

# What an event that left the document is reported as by event_statuses.
STATUS_GONE = 'gone'

_EVERY_TYPE_HINT = 'event_types: [%s]' % ', '.join(EVENT_TYPES)


class ApprovalSelection(object):
    """Validated selection options; build it with ``validate_selection``.

    ``event_ids`` is None or a list of ids without duplicates (compared
    without case or braces), in the order given.
    """

    __slots__ = ('event_ids', 'event_types', 'event_sources', 'max_duration', 'scope', 'leader_only', 'missing',
                 'outside_allowed')

    def __init__(self, event_ids, event_types, event_sources, max_duration, scope, leader_only, missing,
                 outside_allowed=OUTSIDE_ALLOWED_FAIL):
        self.event_ids = event_ids
        self.event_types = event_types
        self.event_sources = event_sources
        self.max_duration = max_duration
        self.scope = scope
        self.leader_only = leader_only
        self.missing = missing
        self.outside_allowed = outside_allowed

    @property
    def uses_filters(self):
        """True when events are chosen by filters rather than by id."""
        return self.event_ids is None

    @property
    def fails_outside_allowed(self):
        """True when an event naming a VM outside allowed_vms fails the task, False when it is skipped.

        Events named by id fail it unless ``outside_allowed`` is ``skip``: the
        caller named them as ready, so silence would hide a change or a wrong
        list. Events found by filters are always skipped.
        """
        return not self.uses_filters and self.outside_allowed == OUTSIDE_ALLOWED_FAIL


class ApprovalPlan(object):
    """What to do with a document: ``approve`` (events, document order for filters,
    given order for ids) and ``skipped`` (``{'event_id', 'reason'}`` dicts)."""

    __slots__ = ('approve', 'skipped')

    def __init__(self, approve, skipped):
        self.approve = approve
        self.skipped = skipped

    @property
    def approve_ids(self):
        """The ids to POST, spelled as the document spells them."""
        return [event['event_id'] for event in self.approve]


def _canonical_choices(values, known, option):
    """``values`` spelled as in ``known`` (matched without case); raises for unknown values."""
    if not values:
        return None
    by_lower = dict((choice.lower(), choice) for choice in known)
    canonical, unknown = [], []
    for value in values:
        choice = by_lower.get(str(value).strip().lower())
        if choice is None:
            unknown.append(value)
        elif choice not in canonical:
            canonical.append(choice)
    if unknown:
        raise InvalidParameterError('%s has unknown value(s) %s; use some of %s'
                                    % (option, ', '.join(repr(value) for value in unknown), ', '.join(known)))
    return canonical


def _unique_event_ids(event_ids):
    malformed = [event_id for event_id in event_ids if not is_event_id(event_id)]
    if malformed:
        raise InvalidParameterError('event_ids has value(s) that are not event ids: %s. Event ids are GUIDs such as '
                                    'C7061BAC-AFDC-4513-B24B-AA5F13A16123, as found in the EventId of the events '
                                    'document; nothing was approved.' % ', '.join(repr(value) for value in malformed))
    unique, seen = [], set()
    for event_id in event_ids:
        key = event_id_key(event_id)
        if key not in seen:
            seen.add(key)
            unique.append(event_id.strip())
    return unique


def validate_selection(event_ids=None, event_types=None, event_sources=None, max_duration=None,
                       scope=SCOPE_THIS_VM, leader_only=False, missing=MISSING_FAIL,
                       outside_allowed=OUTSIDE_ALLOWED_FAIL):
    """Check selection options before any request; return an ApprovalSelection.

    Raises InvalidParameterError when ids are malformed, when ids and filters
    are mixed, when a filter value is unknown, or when nothing selects events:
    approving every event must be asked for by naming every type.
    """
    if scope not in SCOPES:
        raise InvalidParameterError('scope must be one of %s, got %r' % (', '.join(SCOPES), scope))
    if missing not in MISSING_CHOICES:
        raise InvalidParameterError('missing must be one of %s, got %r' % (', '.join(MISSING_CHOICES), missing))
    if outside_allowed not in OUTSIDE_ALLOWED_CHOICES:
        raise InvalidParameterError('outside_allowed must be one of %s, got %r'
                                    % (', '.join(OUTSIDE_ALLOWED_CHOICES), outside_allowed))
    has_filters = bool(event_types) or bool(event_sources) or max_duration is not None
    if event_ids and has_filters:
        raise InvalidParameterError('event_ids cannot be combined with event_types, event_sources or max_duration: '
                                    'either name the events to approve or describe them with filters')
    if not event_ids and not has_filters:
        raise InvalidParameterError('Nothing selects the events to approve. Approving releases an event for every VM '
                                    'in its Resources, so it must be asked for explicitly: give event_ids, or filters '
                                    '(event_types, event_sources, max_duration). To approve every event, say so with '
                                    '%s.' % _EVERY_TYPE_HINT)
    if max_duration is not None and (isinstance(max_duration, bool) or not isinstance(max_duration, int)
                                     or max_duration < 0):
        raise InvalidParameterError('max_duration must be a whole number of seconds, 0 or more, got %r' % (max_duration,))
    return ApprovalSelection(
        event_ids=_unique_event_ids(event_ids) if event_ids else None,
        event_types=_canonical_choices(event_types, EVENT_TYPES, 'event_types'),
        event_sources=_canonical_choices(event_sources, EVENT_SOURCES, 'event_sources'),
        max_duration=max_duration,
        scope=scope,
        leader_only=bool(leader_only),
        missing=missing,
        outside_allowed=outside_allowed,
    )


def duration_qualifies(event, max_duration):
    """True if the event announces an impact of 0 to ``max_duration`` seconds.

    An unknown duration (-1, or absent before api-version 2020-07-01) never
    qualifies: a short-impact filter must not let an unbounded event through.
    """
    duration = event.get('duration_in_seconds')
    if duration is None or isinstance(duration, bool):
        return False
    return 0 <= duration <= max_duration


def matches_filters(event, selection):
    """True if the event passes the selection's type, source and duration filters."""
    if not filter_events([event], event_types=selection.event_types, event_sources=selection.event_sources):
        return False
    if selection.max_duration is not None and not duration_qualifies(event, selection.max_duration):
        return False
    return True


def skip_reason(event, resource_name, selection):
    """Why a present, selected event must not be approved by ``resource_name``, or None to approve it.

    Leadership is looked at before status so that a VM that is not the leader
    reports ``not_leader`` whatever the timing of the leader's approval.
    """
    if selection.scope == SCOPE_THIS_VM and not affects(event, resource_name):
        return SKIP_NOT_THIS_VM
    if selection.leader_only and not is_leader(event, resource_name):
        return SKIP_NOT_LEADER
    if event.get('event_status') == 'Started':
        return SKIP_ALREADY_STARTED
    if not is_approvable(event):
        return SKIP_NOT_SCHEDULED
    return None


def missing_ids_message(missing_ids, document_incarnation=None):
    """The failure message for ids that are not in the current document."""
    where = 'the current events document'
    if document_incarnation is not None:
        where += ' (DocumentIncarnation %s)' % document_incarnation
    return ('event_ids %s are not in %s, so nothing was approved. An event leaves the document when it is over or '
            'when Azure cancels it; check the ids, or set missing: ignore to skip such ids with reason %r.'
            % (', '.join(missing_ids), where, SKIP_GONE))


def plan_approval(events, resource_name, selection, document_incarnation=None, missing_message=missing_ids_message):
    """Decide what ``resource_name`` approves among ``events``; return an ApprovalPlan.

    With ids, each id is looked up without case; an absent id fails
    (``missing: fail``, InvalidParameterError naming every absent id) or is
    skipped as ``gone`` (``missing_message(ids, document_incarnation)`` says
    why, for the source the events came from). With filters, only events passing them (and, with
    scope ``this_vm``, affecting this VM) are considered, so unrelated
    events do not crowd ``skipped``. Events without an EventId are never
    approvable and never listed.
    """
    approve, skipped = [], []

    def consider(event):
        reason = skip_reason(event, resource_name, selection)
        if reason is None:
            approve.append(event)
        else:
            skipped.append({'event_id': event['event_id'], 'reason': reason})

    if selection.uses_filters:
        for event in events:
            if not event.get('event_id') or not matches_filters(event, selection):
                continue
            if selection.scope == SCOPE_THIS_VM and not affects(event, resource_name):
                continue
            consider(event)
        return ApprovalPlan(approve, skipped)

    missing_ids = [event_id for event_id in selection.event_ids if find_event(events, event_id) is None]
    if missing_ids and selection.missing == MISSING_FAIL:
        raise InvalidParameterError(missing_message(missing_ids, document_incarnation))
    for event_id in selection.event_ids:
        event = find_event(events, event_id)
        if event is None:
            skipped.append({'event_id': event_id, 'reason': SKIP_GONE})
        else:
            consider(event)
    return ApprovalPlan(approve, skipped)


def drop_gone(plan, events):
    """A new plan where approved events no longer in ``events`` are skipped as ``gone``.

    For the race where an event ends or is cancelled between reading the
    document and POSTing: IMDS refuses the whole POST for one unknown id.
    The events kept are as ``events`` shows them, since a second request
    releases them as they are now (Azure may have added a VM meanwhile).
    """
    approve, skipped = [], list(plan.skipped)
    for event in plan.approve:
        found = find_event(events, event['event_id'])
        if found is None:
            skipped.append({'event_id': event['event_id'], 'reason': SKIP_GONE})
        else:
            approve.append(found)
    return ApprovalPlan(approve, skipped)


def ids_to_follow(plan):
    """The ids a wait follows: those approved, and those already Started.

    A selected event that was already Started (a host hardware failure skips
    Scheduled) is as much the caller's concern as one just approved.
    """
    followed = list(plan.approve_ids)
    followed.extend(entry['event_id'] for entry in plan.skipped if entry['reason'] == SKIP_ALREADY_STARTED)
    return followed


def event_statuses(events, event_ids):
    """``{event_id: status}`` for each id: its EventStatus, or ``gone`` when absent."""
    statuses = {}
    for event_id in event_ids:
        event = find_event(events, event_id)
        statuses[event_id] = STATUS_GONE if event is None else event.get('event_status')
    return statuses


def wait_satisfied(wait, statuses):
    """True when ``statuses`` (from event_statuses) meet the ``wait`` goal.

    ``started``: every event Started or gone (an event may start and finish
    between two polls). ``completed``: every event gone, since IMDS has no
    Completed status. ``none`` is always satisfied.
    """
    if wait not in WAIT_CHOICES:
        raise InvalidParameterError('wait must be one of %s, got %r' % (', '.join(WAIT_CHOICES), wait))
    if wait == WAIT_STARTED:
        return all(status in ('Started', STATUS_GONE) for status in statuses.values())
    if wait == WAIT_COMPLETED:
        return all(status == STATUS_GONE for status in statuses.values())
    return True


def wait_condition(wait, event_ids):
    """A ``condition(normalized_document)`` for ``_se_wait.poll_until``."""
    ids = list(event_ids)

    def condition(document):
        return wait_satisfied(wait, event_statuses(document['events'], ids))

    return condition


def describe_statuses(document, event_ids):
    """One line naming each followed event's last status, for progress and timeout messages."""
    parts = []
    for event_id in event_ids:
        event = find_event(document['events'], event_id)
        if event is None:
            parts.append('%s gone' % event_id)
        elif event.get('event_status') == 'Scheduled' and event.get('not_before_raw'):
            parts.append('%s Scheduled (NotBefore %s)' % (event_id, event['not_before_raw']))
        else:
            parts.append('%s %s' % (event_id, event.get('event_status')))
    return 'DocumentIncarnation %s: %s' % (document['document_incarnation'], '; '.join(parts) or 'no events followed')
