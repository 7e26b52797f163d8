# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fleet read: query building, paging, normalization of Resource Graph rows, selection."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_document import (
    NORMALIZED_EVENT_KEYS,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import (
    InvalidParameterError,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_graph import (
    build_query,
    normalize_rows,
    parse_arm_event_id,
    read_fleet,
    read_rows,
    select_fleet_events,
)

SUB = '8d10da13-8125-4ba9-a717-bf7490507b3d'
EVENT = 'C7061BAC-AFDC-4513-B24B-AA5F13A16123'
OTHER = 'F020BA2E-3BC0-4C40-A10B-86575A9EABD5'


def row(owner, event_id=EVENT, status='Scheduled', resources=('web-0', 'web-1'), kind='virtualMachines',
        not_before='Mon, 11 Apr 2022 22:26:58 GMT', group='rg-web'):
    arm_id = ('/subscriptions/%s/resourcegroups/%s/providers/Microsoft.Compute/%s/%s/providers/'
              'Microsoft.Maintenance/scheduledevents/%s' % (SUB, group, kind, owner, event_id))
    return {'id': arm_id, 'name': event_id, 'type': 'microsoft.maintenance/scheduledevents', 'subscriptionId': SUB,
            'resourceGroup': group, 'location': 'norwaywest',
            'properties': {'EventId': event_id, 'EventStatus': status, 'EventType': 'Reboot',
                           'ResourceType': 'VirtualMachine', 'Resources': list(resources),
                           'NotBefore': not_before if status == 'Scheduled' else '',
                           'Description': 'planned', 'EventSource': 'Platform', 'DurationInSeconds': -1}}


def test_query_without_filters_reads_every_scheduled_event_in_scope():
    assert build_query() == ("maintenanceresources\n| where type =~ 'microsoft.maintenance/scheduledevents'\n"
                             "| project id, name, type, subscriptionId, resourceGroup, location, properties\n"
                             "| order by id asc")


def test_query_filters():
    query = build_query(['rg-a', 'RG-B'], ['vm1', 'vmss'], ['{%s}' % EVENT])
    assert "| where resourceGroup in~ ('rg-a', 'RG-B')" in query
    assert "| where tostring(split(id, '/')[8]) in~ ('vm1', 'vmss')" in query
    # Braces and case do not matter for ids.
    assert "| where tostring(properties.EventId) in~ ('%s')" % EVENT.lower() in query


@pytest.mark.parametrize('bad', ["rg' or 1==1", 'a"b', 'x|y', 'a\\b', 'line\nbreak', ' '])
def test_names_that_could_change_the_query_are_refused(bad):
    with pytest.raises(InvalidParameterError, match='resource_groups'):
        build_query([bad])


class PagingArm(object):
    """A Resource Graph stand-in serving ``rows`` in pages of the requested size."""

    def __init__(self, rows, quota_after=None):
        self.rows = rows
        self.bodies = []
        self.waits = []
        self.quota_after = quota_after

    def wait(self, seconds, why):
        if seconds:
            self.waits.append((seconds, why))

    def post(self, path, api_version, body):
        assert path == '/providers/Microsoft.ResourceGraph/resources' and api_version == '2022-10-01'
        self.bodies.append(body)
        start = int(body['options'].get('$skipToken') or 0)
        top = body['options']['$top']
        answer = {'data': self.rows[start:start + top], 'totalRecords': len(self.rows)}
        if start + top < len(self.rows):
            answer['$skipToken'] = str(start + top)
        headers = {}
        if self.quota_after is not None:
            left = max(0, self.quota_after - len(self.bodies))
            headers = {'x-ms-user-quota-remaining': str(left), 'x-ms-user-quota-resets-after': '00:00:03'}
        return answer, headers


def test_paging_follows_skip_tokens_and_sends_the_scope():
    rows = [row('vm%d' % index, event_id='%08d-0000-0000-0000-000000000000' % index) for index in range(7)]
    arm = PagingArm(rows)
    got, pages = read_rows(arm, 'Q', [SUB], page_size=3)
    assert got == rows and pages == 3
    assert [body['options'].get('$skipToken') for body in arm.bodies] == [None, '3', '6']
    assert all(body['subscriptions'] == [SUB] and body['query'] == 'Q' for body in arm.bodies)


def test_paging_waits_when_the_quota_is_spent():
    rows = [row('vm%d' % index, event_id='%08d-0000-0000-0000-000000000000' % index) for index in range(3)]
    arm = PagingArm(rows, quota_after=1)
    read_rows(arm, 'Q', page_size=1)
    assert [seconds for seconds, dummy in arm.waits] == [3, 3]
    assert 'subscriptions' not in arm.bodies[0]


@pytest.mark.parametrize('size', [0, 1001, True])
def test_page_size_is_checked(size):
    with pytest.raises(InvalidParameterError, match='page_size'):
        read_rows(PagingArm([]), 'Q', page_size=size)


def test_rows_of_one_event_become_one_event_with_every_arm_id():
    events, warnings = normalize_rows([row('web-0'), row('web-1')], now=0)
    assert warnings == []
    assert len(events) == 1
    event = events[0]
    for key in NORMALIZED_EVENT_KEYS:
        assert key in event
    assert event['event_id'] == EVENT and event['event_status'] == 'Scheduled'
    assert event['not_before'] == '2022-04-11T22:26:58Z'
    assert event['arm_id'].endswith('/virtualMachines/web-0/providers/Microsoft.Maintenance/scheduledevents/' + EVENT)
    assert len(event['arm_ids']) == 2
    assert event['arm_resources'] == [{'kind': 'virtualMachines', 'name': 'web-0'},
                                      {'kind': 'virtualMachines', 'name': 'web-1'}]
    assert (event['subscription_id'], event['resource_group'], event['location']) == (SUB, 'rg-web', 'norwaywest')
    assert event['leader'] == 'web-0'
    assert event['seconds_until_not_before'] == 1649716018


def test_rows_read_at_different_moments_take_the_furthest_status():
    events, dummy = normalize_rows([row('web-0'), row('web-1', status='Completed')])
    assert events[0]['event_status'] == 'Completed' and events[0]['not_before'] is None


def test_rows_that_disagree_on_resources_give_every_vm_any_of_them_names():
    # Resource Graph rows of one event are read a moment apart: a VM Azure
    # added shows in one of them only, and acknowledging releases it too.
    events, dummy = normalize_rows([row('web-0', resources=['web-0']), row('web-1', resources=['WEB-0', 'web-1'])])
    assert events[0]['resources'] == ['web-0', 'web-1'] and events[0]['leader'] == 'web-0'


def test_outside_only_statuses_are_kept():
    events, dummy = normalize_rows([row('a', event_id=EVENT, status='Canceled'),
                                    row('b', event_id=OTHER, status='Completed')])
    assert [event['event_status'] for event in events] == ['Canceled', 'Completed']


def test_bad_rows_are_dropped_or_kept_with_a_warning():
    odd = row('x')
    odd['id'] = '/something/else'
    events, warnings = normalize_rows(['text', {'id': 'no-props'}, odd])
    assert len(events) == 1 and events[0]['arm_resources'] == [{'kind': None, 'name': None}]
    assert len(warnings) == 3


def test_scale_set_ids_parse():
    parts = parse_arm_event_id(row('ss', kind='virtualMachineScaleSets')['id'])
    assert parts == {'subscription_id': SUB, 'resource_group': 'rg-web', 'resource_kind': 'virtualMachineScaleSets',
                     'resource_name': 'ss', 'event_id': EVENT}
    assert parse_arm_event_id('/subscriptions/x') is None


def test_selection_by_vm_name_and_status():
    events, dummy = normalize_rows([row('web-0', event_id=EVENT, resources=['web-0']),
                                    row('db-0', event_id=OTHER, resources=['DB-0'], status='Started')])
    assert [e['event_id'] for e in select_fleet_events(events, vm_names=['db-0'])] == [OTHER]
    assert [e['event_id'] for e in select_fleet_events(events, event_statuses=['scheduled'])] == [EVENT]
    assert select_fleet_events(events, vm_names=['nobody']) == []


def test_read_fleet_reports_query_pages_and_rows():
    fleet = read_fleet(PagingArm([row('web-0'), row('web-1')]), resource_groups=['rg-web'], page_size=1)
    assert fleet['pages'] == 2 and fleet['rows'] == 2 and len(fleet['events']) == 1
    assert "resourceGroup in~ ('rg-web')" in fleet['query']


def test_an_answer_without_data_is_an_error():
    class Odd(PagingArm):
        def post(self, path, api_version, body):
            return {'value': []}, {}
    with pytest.raises(InvalidParameterError, match='data list'):
        read_rows(Odd([]), 'Q')
