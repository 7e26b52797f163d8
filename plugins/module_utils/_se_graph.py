# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Scheduled Events from Azure Resource Graph, normalized like IMDS events. Internal use only.

The fleet read: build the ``maintenanceresources`` query, page through it
(``$skipToken``) politely (quota headers), and turn rows into the
normalized events of ``_se_document`` plus what only ARM knows: the ARM ids,
subscription, resource group, and the statuses IMDS never shows (Completed,
Canceled). One event owned by several ARM resources (VMs of an availability
set) comes back as several rows; it is returned once, with every ARM id.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ._se_arm import quota_pause
from ._se_arm_options import MAX_PAGE_SIZE
from ._se_document import EVENT_STATUSES, normalize_event
from ._se_errors import InvalidParameterError
from ._se_select import affects, event_id_key, filter_events, leader_of
from ._se_time import seconds_until

RESOURCE_GRAPH_PATH = '/providers/Microsoft.ResourceGraph/resources'
RESOURCE_GRAPH_API_VERSION = '2022-10-01'
ROW_TYPE = 'microsoft.maintenance/scheduledevents'
FINISHED_STATUSES = ('Completed', 'Canceled')
FLEET_STATUSES = EVENT_STATUSES + FINISHED_STATUSES
# A fleet of a million events is a bug somewhere, not a page count to honour.
_MAX_PAGES = 1000
_PROJECTED = ('id', 'name', 'type', 'subscriptionId', 'resourceGroup', 'location', 'properties')
# An event's status only moves forward: Scheduled, Started, then Completed or Canceled.
_STATUS_RANK = {'scheduled': 1, 'started': 2, 'completed': 3, 'canceled': 3}
_ARM_EVENT_ID = re.compile(
    r'^/subscriptions/(?P<subscription_id>[^/]+)/resourcegroups/(?P<resource_group>[^/]+)/providers/'
    r'microsoft\.compute/(?P<resource_kind>virtualmachines|virtualmachinescalesets)/(?P<resource_name>[^/]+)/'
    r'providers/microsoft\.maintenance/scheduledevents/(?P<event_id>[^/]+)$', re.IGNORECASE)
_KINDS = {'virtualmachines': 'virtualMachines', 'virtualmachinescalesets': 'virtualMachineScaleSets'}
# Names in ARM never hold quotes, backslashes or line breaks; refusing them
# keeps user input from changing the query.
_UNSAFE = re.compile(r"['\"\\\r\n|]")


def _kql_list(values, option):
    quoted = []
    for value in values:
        text = str(value).strip()
        if not text or _UNSAFE.search(text):
            raise InvalidParameterError('%s: %r is not a valid Azure name or id (no quotes, backslashes, "|" or line '
                                        'breaks)' % (option, value))
        quoted.append("'%s'" % text)
    return '(%s)' % ', '.join(quoted)


def build_query(resource_groups=None, resource_names=None, event_ids=None):
    """The Resource Graph query for the fleet read; empty filters select everything in scope."""
    stages = ['maintenanceresources', "where type =~ '%s'" % ROW_TYPE]
    if resource_groups:
        stages.append('where resourceGroup in~ %s' % _kql_list(resource_groups, 'resource_groups'))
    if resource_names:
        # The 9th segment of the event's ARM id is the VM or scale-set name.
        stages.append("where tostring(split(id, '/')[8]) in~ %s" % _kql_list(resource_names, 'resource_names'))
    if event_ids:
        stages.append('where tostring(properties.EventId) in~ %s'
                      % _kql_list([event_id_key(event_id) for event_id in event_ids], 'event_ids'))
    stages.append('project %s' % ', '.join(_PROJECTED))
    # A stable order keeps paging consistent while rows change.
    stages.append('order by id asc')
    return '\n| '.join(stages)


def request_body(query, subscriptions, page_size, skip_token=None):
    options = {'resultFormat': 'objectArray', '$top': page_size}
    if skip_token:
        options['$skipToken'] = skip_token
    body = {'query': query, 'options': options}
    if subscriptions:
        body['subscriptions'] = list(subscriptions)
    return body


def read_rows(client, query, subscriptions=None, page_size=MAX_PAGE_SIZE):
    """Every row of ``query``, page by page; ``(rows, pages)``. Waits when the quota says so."""
    if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= MAX_PAGE_SIZE:
        raise InvalidParameterError('page_size must be from 1 to %d (the Resource Graph limit), got %r'
                                    % (MAX_PAGE_SIZE, page_size))
    rows, skip_token, pages = [], None, 0
    pause = 0.0
    while True:
        client.wait(pause, 'the Resource Graph quota (x-ms-user-quota-remaining 0)')
        answer, headers = client.post(RESOURCE_GRAPH_PATH, RESOURCE_GRAPH_API_VERSION,
                                      request_body(query, subscriptions, page_size, skip_token))
        pages += 1
        data = answer.get('data') if isinstance(answer, dict) else None
        if not isinstance(data, list):
            raise InvalidParameterError('Resource Graph answered without a data list (resultFormat objectArray); '
                                        'check management_endpoint: %r' % (str(answer)[:200],))
        rows.extend(data)
        skip_token = answer.get('$skipToken')
        if not skip_token:
            return rows, pages
        if pages >= _MAX_PAGES:
            raise InvalidParameterError('Resource Graph kept paging after %d pages; narrow the scope '
                                        '(subscriptions, resource_groups, resource_names)' % pages)
        pause = quota_pause(headers)


def parse_arm_event_id(arm_id):
    """``{subscription_id, resource_group, resource_kind, resource_name, event_id}`` of an event ARM id, or None."""
    match = _ARM_EVENT_ID.match(str(arm_id or ''))
    if match is None:
        return None
    parts = match.groupdict()
    parts['resource_kind'] = _KINDS[parts['resource_kind'].lower()]
    return parts


def _fleet_event(row, warnings):
    properties = row.get('properties')
    if not isinstance(properties, dict):
        warnings.append('Resource Graph row %s has no properties object and was ignored' % row.get('id'))
        return None
    event, event_warnings = normalize_event(properties)
    warnings.extend(event_warnings)
    if not event['event_id']:
        event['event_id'] = row.get('name')
    parts = parse_arm_event_id(row.get('id'))
    if parts is None:
        warnings.append('Resource Graph row id %r is not a scheduled event id of a VM or scale set; kept without '
                        'its resource' % (row.get('id'),))
        parts = {}
    event.update({
        'arm_id': row.get('id'),
        'arm_ids': [row.get('id')],
        'subscription_id': row.get('subscriptionId') or parts.get('subscription_id'),
        'resource_group': row.get('resourceGroup') or parts.get('resource_group'),
        'arm_resources': [{'kind': parts.get('resource_kind'), 'name': parts.get('resource_name')}],
        'location': row.get('location'),
    })
    return event


def status_rank(event):
    """How far along ``event`` is (0 for a status Azure does not define).

    Reads of one event taken at different moments (rows, hosts, deliveries)
    can disagree: the one furthest along is the truth now.
    """
    return _STATUS_RANK.get(str(event.get('event_status')).lower(), 0)


def _merge(kept, event):
    """Fold another row of the same event into ``kept``."""
    kept['arm_ids'].append(event['arm_id'])
    kept['arm_resources'].extend(event['arm_resources'])
    # Rows read a moment apart can disagree on Resources (Azure added a VM):
    # the event releases every VM any of them names.
    named = set(str(name).lower() for name in kept['resources'])
    kept['resources'] = kept['resources'] + [name for name in event['resources'] if str(name).lower() not in named]
    if status_rank(event) > status_rank(kept):
        for key in ('event_status', 'not_before_raw', 'not_before'):
            kept[key] = event[key]


def normalize_rows(rows, now=None):
    """``(events, warnings)``: one normalized event per EventId, in row order, annotated for the fleet.

    Each event has the keys of ``_se_document`` plus ``arm_id`` (its first
    row), ``arm_ids``, ``arm_resources`` (``kind``, ``name``),
    ``subscription_id``, ``resource_group``, ``location``, ``leader`` (the
    first of ``resources``) and ``seconds_until_not_before``.
    """
    warnings, events, by_id = [], [], {}
    for row in rows:
        if not isinstance(row, dict):
            warnings.append('Resource Graph row %r is not an object and was ignored' % (row,))
            continue
        event = _fleet_event(row, warnings)
        if event is None:
            continue
        key = event_id_key(event['event_id'])
        if key in by_id:
            _merge(by_id[key], event)
            continue
        by_id[key] = event
        events.append(event)
    for event in events:
        event['leader'] = leader_of(event)
        event['seconds_until_not_before'] = seconds_until(event['not_before'], now)
    return events, warnings


def select_fleet_events(events, vm_names=None, event_types=None, event_statuses=None, event_sources=None):
    """The events passing the type/status/source filters and naming one of ``vm_names`` (if given) in Resources."""
    selected = filter_events(events, event_types or [], event_statuses or [], event_sources or [])
    if vm_names:
        selected = [event for event in selected if any(affects(event, name) for name in vm_names)]
    return selected


def read_fleet(client, subscriptions=None, resource_groups=None, resource_names=None, event_ids=None,
               page_size=MAX_PAGE_SIZE, now=None):
    """Query, page and normalize: ``{'events', 'warnings', 'pages', 'query', 'rows'}``."""
    query = build_query(resource_groups, resource_names, event_ids)
    rows, pages = read_rows(client, query, subscriptions, page_size)
    events, warnings = normalize_rows(rows, now)
    return {'events': events, 'warnings': warnings, 'pages': pages, 'query': query, 'rows': len(rows)}
