# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Selecting, annotating and diffing normalized events. Internal use only.

Pure functions over the normalized events of ``_se_document``. Azure compares
VM names and event ids without regard to case, so everything here does too.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ._se_time import seconds_until

_GUID = r'[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}'
# Braces are accepted in pairs only: '{abc...' is a typo, not an id.
_EVENT_ID = re.compile(r'^(?:%s|\{%s\})$' % (_GUID, _GUID))

# Fields whose change makes an event "changed" for pollers. Description and
# other texts are compared too: a new text is news to a human reading logs.
_COMPARED_KEYS = ('event_type', 'resource_type', 'resources', 'event_status', 'not_before_raw',
                  'description', 'event_source', 'duration_in_seconds')


def is_event_id(text):
    """True if ``text`` looks like an event id (a GUID, any case, braces optional)."""
    return isinstance(text, str) and bool(_EVENT_ID.match(text.strip()))


def event_id_key(event_id):
    """The form of an event id used for comparisons: no braces, lower case."""
    if event_id is None:
        return None
    return str(event_id).strip().strip('{}').lower()


def same_resource(name_a, name_b):
    """True if two VM names denote the same VM (Azure names ignore case)."""
    if name_a is None or name_b is None:
        return False
    return str(name_a).lower() == str(name_b).lower()


def affects(event, resource_name):
    """True if ``resource_name`` is in the event's Resources."""
    if resource_name is None:
        return False
    # Lower-cased once: fleets of events with many Resources call this a lot.
    wanted = str(resource_name).lower()
    return any(name is not None and str(name).lower() == wanted for name in event.get('resources') or [])


def events_affecting(events, resource_name):
    """The events whose Resources include ``resource_name``."""
    return [event for event in events if affects(event, resource_name)]


def leader_of(event):
    """The event's leader: the first entry of Resources, or None when empty.

    Approving releases the event for every VM in Resources, so a fleet elects
    one approver per event; the first VM listed is a choice every VM can make
    on its own and agree on.
    """
    resources = event.get('resources') or []
    return resources[0] if resources else None


def is_leader(event, resource_name):
    """True if ``resource_name`` is the event's leader."""
    return same_resource(leader_of(event), resource_name)


def _matches(value, wanted):
    if not wanted:
        return True
    if isinstance(wanted, str):
        # One value given where a list is documented must not match letter by letter.
        wanted = [wanted]
    if value is None:
        return False
    value = value.lower()
    return any(value == str(candidate).lower() for candidate in wanted)


def filter_events(events, event_types=None, event_statuses=None, event_sources=None):
    """Events matching every given filter (a list of accepted values each).

    An empty or None filter accepts everything. An event without the field
    (older api-versions have no EventSource) never matches a non-empty filter.
    """
    return [event for event in events
            if _matches(event.get('event_type'), event_types)
            and _matches(event.get('event_status'), event_statuses)
            and _matches(event.get('event_source'), event_sources)]


def find_event(events, event_id):
    """The event with ``event_id`` (compared without case), or None."""
    wanted = event_id_key(event_id)
    for event in events:
        if event_id_key(event.get('event_id')) == wanted:
            return event
    return None


def _status_is(event, status):
    value = event.get('event_status')
    return isinstance(value, str) and value.lower() == status.lower()


def is_pending(event):
    """True while an event is Scheduled or Started (i.e. still in the document)."""
    return _status_is(event, 'Scheduled') or _status_is(event, 'Started')


def is_approvable(event):
    """The one rule for which events may be approved at all: Scheduled ones.

    A Started event is already under way; a status IMDS may add later is
    not known to accept approval. Every consumer (modules, daemon policy,
    rolling playbooks) asks this before anything else about approval.
    """
    return _status_is(event, 'Scheduled')


def maintenance_pending(events, resource_name):
    """True if any Scheduled or Started event affects ``resource_name``."""
    return any(is_pending(event) and affects(event, resource_name) for event in events)


def annotate_event(event, resource_name, now=None):
    """A copy of ``event`` with what it means for the VM ``resource_name``.

    Adds ``affects_this_vm``, ``leader``, ``is_leader`` and
    ``seconds_until_not_before`` (None once the event has Started).
    """
    annotated = dict(event)
    annotated['affects_this_vm'] = affects(event, resource_name)
    annotated['leader'] = leader_of(event)
    annotated['is_leader'] = is_leader(event, resource_name)
    annotated['seconds_until_not_before'] = seconds_until(event.get('not_before'), now)
    return annotated


def annotate_events(events, resource_name, now=None):
    """``annotate_event`` for every event."""
    return [annotate_event(event, resource_name, now) for event in events]


def diff_events(previous, current):
    """Compare the events of two documents, as a poller's handling loop needs.

    Returns ``{'new': [...], 'changed': [{'before': e, 'after': e}, ...],
    'removed': [...]}``, each in document order. Events are matched by id
    without regard to case; an event without id cannot be followed and counts
    as new each time.
    """
    previous_by_id = {}
    for event in previous or []:
        key = event_id_key(event.get('event_id'))
        if key:
            previous_by_id[key] = event
    current_keys = set()
    new, changed = [], []
    for event in current or []:
        key = event_id_key(event.get('event_id'))
        before = previous_by_id.get(key) if key else None
        if key:
            current_keys.add(key)
        if before is None:
            new.append(event)
        elif any(before.get(field) != event.get(field) for field in _COMPARED_KEYS):
            changed.append({'before': before, 'after': event})
    removed = [event for event in previous or []
               if event_id_key(event.get('event_id')) and event_id_key(event.get('event_id')) not in current_keys]
    return {'new': new, 'changed': changed, 'removed': removed}


def became_started(change):
    """True if a ``changed`` entry of ``diff_events`` is a move to Started."""
    return _status_is(change['after'], 'Started') and not _status_is(change['before'], 'Started')
