# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parsing Scheduled Events documents into normalized events. Internal use only.

The normalized form uses snake_case keys and is the one every part of the
collection speaks (module results, lookup, filters, service hooks, EDA). The
untouched document is kept by callers that need it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ._se_errors import MalformedDocumentError
from ._se_time import normalize_not_before

DEFAULT_API_VERSION = '2020-07-01'

# Every api-version IMDS accepts for scheduledevents, oldest first, with what
# it added. The '{latest}' form of the preview is not accepted by IMDS.
API_VERSIONS = (
    '2017-03-01',  # preview: resource names carry a leading underscore
    '2017-08-01',  # underscore dropped, Metadata header enforced
    '2017-11-01',  # EventType Preempt (Spot eviction)
    '2019-01-01',  # EventType Terminate (scale sets)
    '2019-04-01',  # Description
    '2019-08-01',  # EventSource
    '2020-07-01',  # DurationInSeconds
)

EVENT_TYPES = ('Freeze', 'Reboot', 'Redeploy', 'Preempt', 'Terminate')
EVENT_STATUSES = ('Scheduled', 'Started')
EVENT_SOURCES = ('Platform', 'User')

# IMDS field -> normalized key. Fields an older api-version does not send come
# out as None.
_FIELDS = (
    ('EventId', 'event_id'),
    ('EventType', 'event_type'),
    ('ResourceType', 'resource_type'),
    ('Resources', 'resources'),
    ('EventStatus', 'event_status'),
    ('NotBefore', 'not_before_raw'),
    ('Description', 'description'),
    ('EventSource', 'event_source'),
    ('DurationInSeconds', 'duration_in_seconds'),
)

# Known values are spelled one way after normalizing, whatever case IMDS (or
# a relay) used, so that every consumer can compare with ``==``: a
# "started" event is Started for approvals and waits alike.
_CANONICAL = (
    ('event_type', EVENT_TYPES),
    ('event_status', EVENT_STATUSES),
    ('event_source', EVENT_SOURCES),
)


def _canonical(value, known):
    if value is None:
        return None
    for choice in known:
        if value.strip().lower() == choice.lower():
            return choice
    return value


NORMALIZED_EVENT_KEYS = tuple(key for dummy, key in _FIELDS) + ('not_before',)


def decode_body(body):
    """Decode a response body (bytes or text) into ``(document, warnings)``.

    A UTF-8 byte-order mark is accepted. Bytes that are not UTF-8 are
    replaced (U+FFFD) and a warning says so, rather than hiding every event
    of the document for one bad byte in a Description. Raises
    MalformedDocumentError when the text is not JSON.
    """
    warnings = []
    if isinstance(body, bytes):
        try:
            body = body.decode('utf-8-sig')
        except UnicodeDecodeError as exc:
            warnings.append('IMDS answered with bytes that are not UTF-8 (first at offset %d); they were replaced '
                            'by U+FFFD and the rest of the document was read' % exc.start)
            body = body.decode('utf-8-sig', 'replace')
    elif body.startswith('\ufeff'):
        body = body[1:]
    try:
        return json.loads(body), warnings
    except (ValueError, RecursionError) as exc:
        # RecursionError: absurdly nested JSON, which no IMDS ever sends.
        excerpt = body[:120] + ('...' if len(body) > 120 else '')
        raise MalformedDocumentError('IMDS answered with a body that is not JSON (%s): %r. '
                                     'This is usually a passing fault; if it persists, check that the '
                                     'endpoint points to IMDS and that no proxy rewrites the answer' % (exc, excerpt))


def decode_document(body):
    """Decode a response body into the JSON document (see decode_body; its warnings are dropped)."""
    return decode_body(body)[0]


# ASCII digits, optionally a zero fraction ('2', '2.0'); at most 18 digits so
# the value fits every consumer (metrics, state files) and int() of a
# 5000-digit string never runs.
_WHOLE_NUMBER_TEXT = re.compile(r'^\s*(-?[0-9]{1,18})(?:\.0*)?\s*$')
_WHOLE_NUMBER_LIMIT = 10 ** 18


def whole_number(value):
    """The one numeric rule of the document: the int a field holds, or None.

    Accepted: a JSON integer, a JSON number without fraction (``2.0``), or a
    string holding either, within 18 digits. Rejected: booleans, fractions,
    anything else.
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value if -_WHOLE_NUMBER_LIMIT < value < _WHOLE_NUMBER_LIMIT else None
    if isinstance(value, float):
        # NaN and the infinities are no whole numbers (is_integer() says so).
        if not value.is_integer():
            return None
        return whole_number(int(value))
    if isinstance(value, str):
        match = _WHOLE_NUMBER_TEXT.match(value)
        return int(match.group(1)) if match else None
    return None


def _incarnation(document):
    value = document.get('DocumentIncarnation')
    incarnation = whole_number(value)
    if incarnation is None:
        raise MalformedDocumentError('Scheduled Events document has no whole-number DocumentIncarnation (got %s); '
                                     'check that the endpoint is the scheduledevents path' % (_excerpt(value),))
    return incarnation


def _excerpt(value):
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + '...'


def _resources(value, strip_underscore):
    """``(names, warning)``: the VM names of Resources, and what was wrong with it ('' when nothing)."""
    if value is None:
        return [], ''
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return [], ('Resources is not a list of VM names (got %s): the event names no VM here, so it is not known to '
                    'affect any; check that the endpoint is IMDS\'s scheduledevents path' % (_excerpt(value),))
    names = [str(name) for name in value if name is not None]
    if strip_underscore:
        # The 2017-03-01 preview prefixed IaaS names with '_'; later versions
        # do not, and VM identity never has it, so matching needs it gone.
        names = [name[1:] if name.startswith('_') else name for name in names]
    return names, ''


def normalize_event(raw_event, api_version=DEFAULT_API_VERSION):
    """Normalize one IMDS event dict.

    Returns ``(event, warnings)``. Unknown event types and statuses are kept
    as they are: newer IMDS versions may add some.
    """
    warnings = []
    event = {}
    for imds_key, key in _FIELDS:
        event[key] = raw_event.get(imds_key)
    event['resources'], resources_warning = _resources(raw_event.get('Resources'), api_version == '2017-03-01')
    event['duration_in_seconds'] = whole_number(raw_event.get('DurationInSeconds'))
    for key in ('event_id', 'event_type', 'resource_type', 'event_status', 'description', 'event_source'):
        if event[key] is not None and not isinstance(event[key], str):
            event[key] = str(event[key])
    for key, known in _CANONICAL:
        event[key] = _canonical(event[key], known)
    not_before, warning = normalize_not_before(event['not_before_raw'])
    event['not_before'] = not_before
    for problem in (resources_warning, warning):
        if problem:
            warnings.append('Event %s: %s' % (event['event_id'], problem))
    if not event['event_id']:
        warnings.append('An event without EventId was kept but cannot be approved: %s' % (json.dumps(raw_event, sort_keys=True),))
    return event, warnings


def parse_document(document, api_version=DEFAULT_API_VERSION):
    """Normalize a decoded Scheduled Events document.

    Returns ``{'document_incarnation': int, 'events': [...], 'warnings': [...]}``.
    Raises MalformedDocumentError when the document is not usable at all
    (not an object, no incarnation, Events not a list). Entries of Events that
    are not objects are dropped with a warning rather than failing the whole
    document, so one bad entry does not hide the others.
    """
    if not isinstance(document, dict):
        raise MalformedDocumentError('Scheduled Events document is not a JSON object (got %s); '
                                     'check that the endpoint is the scheduledevents path' % type(document).__name__)
    incarnation = _incarnation(document)
    raw_events = document.get('Events', [])
    if raw_events is None:
        raw_events = []
    if not isinstance(raw_events, list):
        raise MalformedDocumentError('Scheduled Events document has Events of type %s, expected a list'
                                     % type(raw_events).__name__)
    events = []
    warnings = []
    for position, raw_event in enumerate(raw_events):
        if not isinstance(raw_event, dict):
            warnings.append('Events[%d] is not an object and was ignored: %r' % (position, raw_event))
            continue
        event, event_warnings = normalize_event(raw_event, api_version)
        events.append(event)
        warnings.extend(event_warnings)
    return {'document_incarnation': incarnation, 'events': events, 'warnings': warnings}
