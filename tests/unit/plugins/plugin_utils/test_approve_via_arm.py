# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""scheduled_events_approve with via: arm: this host's approval, decided as over IMDS, sent through ARM.

A fake ARM client answers Resource Graph with rows built here and records
every request, so each test can say what was read and what was acknowledged.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.azure_maintenance.scheduled_events.plugins.modules import scheduled_events_approve
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._approve_via_arm import (
    MIN_GRAPH_POLL_INTERVAL,
    approve_via_arm,
)

SUB = '8d10da13-8125-4ba9-a717-bf7490507b3d'
VM_ID = '/subscriptions/%s/resourceGroups/rg-web/providers/Microsoft.Compute/virtualMachines/web_1' % SUB
# azure_rm inventory variables of the host "frontend-a", whose VM is web_1.
AZURE_RM = {'name': 'web_1', 'id': VM_ID}

OWN = 'AAAAAAAA-0000-4000-8000-000000000001'          # names web_1 (leader) and web_2
NEIGHBOUR = 'BBBBBBBB-0000-4000-8000-000000000002'    # names web_2 only
LED_BY_OTHER = 'CCCCCCCC-0000-4000-8000-000000000003'  # names web_2 (leader) and web_1
NAMESAKE = 'DDDDDDDD-0000-4000-8000-000000000004'     # names a VM "web_1" of another resource group
DONE = 'EEEEEEEE-0000-4000-8000-000000000005'         # names web_1, Completed

EVENTS = [
    (OWN, 'rg-web', ['web_1', 'web_2'], 'Scheduled'),
    (NEIGHBOUR, 'rg-web', ['web_2'], 'Scheduled'),
    (LED_BY_OTHER, 'rg-web', ['web_2', 'web_1'], 'Scheduled'),
    (NAMESAKE, 'rg-other', ['web_1'], 'Scheduled'),
    (DONE, 'rg-web', ['web_1'], 'Completed'),
]


def rows():
    """Resource Graph rows: one per event and owning VM, as the maintenanceresources table has them."""
    result = []
    for event_id, group, resources, status in EVENTS:
        for vm in resources:
            owner = '/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/virtualMachines/%s' % (
                SUB, group, vm)
            result.append({'id': owner + '/providers/Microsoft.Maintenance/scheduledevents/' + event_id,
                           'name': event_id, 'subscriptionId': SUB, 'resourceGroup': group,
                           'properties': {'EventId': event_id, 'EventType': 'Freeze', 'EventStatus': status,
                                          'ResourceType': 'VirtualMachine', 'Resources': resources,
                                          'EventSource': 'Platform', 'DurationInSeconds': 5,
                                          'NotBefore': 'Mon, 11 Apr 2022 22:26:58 GMT'}})
    return result


class FakeArm(object):
    """Answers Resource Graph with ``rows()`` and every acknowledge with 200; keeps each request."""

    def __init__(self):
        self.queries = []
        self.acknowledged = []

    def renew(self):
        return None

    def monotonic(self):
        return 0.0

    def wait(self, seconds, why):
        return None

    def pause(self, seconds):
        raise AssertionError('no test here waits')

    def post(self, path, api_version, payload):
        if path.endswith('/resources'):
            self.queries.append(payload)
            return {'data': rows()}, {}
        self.acknowledged.append(path)
        return {}, {}


def params(**args):
    outcome = ArgumentSpecValidator(scheduled_events_approve.module_argument_spec()).validate(dict(args, via='arm'))
    assert not outcome.error_messages, outcome.error_messages
    return outcome.validated_parameters


def approve(variables=None, check_mode=False, **args):
    client = FakeArm()
    result = approve_via_arm(params(**args), check_mode, AZURE_RM if variables is None else variables, client=client)
    return result, client


def acknowledged_ids(client):
    return sorted(path.rsplit('/', 2)[-2] for path in client.acknowledged)


def test_this_vm_only_by_default_and_a_namesake_elsewhere_is_another_vm():
    result, client = approve(event_types=['Freeze'])
    assert not result.get('failed'), result
    # OWN and LED_BY_OTHER name this VM; NAMESAKE names a VM of the same name in rg-other.
    assert acknowledged_ids(client) == sorted([OWN, LED_BY_OTHER])
    assert sorted(result['approved']) == sorted([OWN, LED_BY_OTHER]) and result['changed']
    assert {'event_id': DONE, 'reason': 'finished'} in result['skipped_events']
    assert NEIGHBOUR not in [entry['event_id'] for entry in result['skipped_events']]
    assert result['resource_name'] == 'web_1' and result['resource_name_source'] == 'inventory'
    assert result['via'] == 'arm'


def test_the_read_stays_in_this_vms_resource_group_unless_told_otherwise():
    dummy, client = approve(event_types=['Freeze'])
    assert client.queries[0]['subscriptions'] == [SUB]
    assert "'rg-web'" in client.queries[0]['query']
    dummy, client = approve(event_types=['Freeze'], arm={'resource_groups': ['rg-web', 'rg-other']})
    assert "'rg-other'" in client.queries[0]['query']


def test_a_namesake_named_by_id_is_not_this_vm_even_in_a_wider_read():
    result, client = approve(event_ids=[NAMESAKE], arm={'resource_groups': ['rg-web', 'rg-other']})
    assert not result.get('failed'), result
    assert result['skipped_events'] == [{'event_id': NAMESAKE, 'reason': 'not_this_vm'}]
    assert client.acknowledged == [] and not result['changed']


def test_leader_only_leaves_an_event_to_its_leader():
    result, client = approve(event_types=['Freeze'], leader_only=True)
    assert acknowledged_ids(client) == [OWN]
    assert {'event_id': LED_BY_OTHER, 'reason': 'not_leader'} in result['skipped_events']


def test_check_mode_acknowledges_nothing_and_says_what_it_would():
    result, client = approve(check_mode=True, event_ids=[OWN])
    assert result['approved'] == [OWN] and result['changed']
    assert client.acknowledged == []


@pytest.mark.parametrize('args, expected', [
    ({'event_ids': [NEIGHBOUR]}, 'not_this_vm'),
    ({'event_ids': [NEIGHBOUR], 'scope': 'all'}, None),
])
def test_another_vms_event_is_approved_only_with_scope_all_and_its_id(args, expected):
    result, client = approve(**args)
    if expected is None:
        assert acknowledged_ids(client) == [NEIGHBOUR]
    else:
        assert client.acknowledged == [] and result['skipped_events'] == [{'event_id': NEIGHBOUR, 'reason': expected}]


def test_allowed_vms_holds_as_over_imds():
    result, client = approve(event_ids=[OWN], allowed_vms=['web_1'])
    assert result['failed'] and 'outside allowed_vms: %s (names web_2)' % OWN in result['msg']
    assert 'nothing was acknowledged' in result['msg'] and client.acknowledged == []
    result, client = approve(event_ids=[OWN], allowed_vms=['web_1', 'WEB_2'])
    assert not result.get('failed'), result
    assert acknowledged_ids(client) == [OWN]


def test_scope_all_with_filters_is_refused_before_anything_is_read():
    result, client = approve(event_types=['Freeze'], scope='all')
    assert result['failed'] and 'needs event_ids' in result['msg'] and 'scheduled_events_fleet_approve' in result['msg']
    assert client.queries == [] and client.acknowledged == []


def test_an_unknown_id_fails_before_anything_is_acknowledged():
    missing = '00000000-1111-4222-8333-444444444444'
    result, client = approve(event_ids=[OWN, missing])
    assert result['failed'] and missing in result['msg'] and client.acknowledged == []


@pytest.mark.parametrize('variables, option, name, source', [
    ({'azure_scheduled_events_resource_name': 'web_1'}, None, 'web_1', 'inventory'),
    (AZURE_RM, None, 'web_1', 'inventory'),
    ({'azure_scheduled_events_resource_name': 'web_9'}, 'web_1', 'web_1', 'option'),
])
def test_where_this_vms_name_comes_from(variables, option, name, source):
    result, dummy = approve(variables=variables, resource_name=option, event_ids=[OWN])
    assert (result['resource_name'], result['resource_name_source']) == (name, source)
    assert result['approved'] == [OWN]


def test_a_host_without_a_vm_name_fails_saying_what_to_set():
    # "name" alone is no VM name: only next to an Azure VM id (azure_rm) is it one.
    result, client = approve(variables={'name': 'frontend-a'}, event_ids=[OWN])
    assert result['failed'] and 'azure_scheduled_events_resource_name' in result['msg']
    assert client.queries == []


def test_the_result_has_every_key_of_an_imds_approval():
    imds_keys = {'changed', 'approved', 'skipped_events', 'document_incarnation', 'events', 'resource_name',
                 'resource_name_source', 'waited', 'last_statuses', 'via'}
    result, dummy = approve(event_ids=[OWN])
    assert imds_keys <= set(result)
    assert set(event['event_id'] for event in result['events']) == {OWN, LED_BY_OTHER, DONE}


def test_waiting_polls_resource_graph_no_faster_than_its_quota_allows():
    from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._approve_via_arm import (
        fleet_parameters,
    )
    fleet = fleet_parameters(params(event_ids=[OWN], poll_interval=1), {'resource_name': 'web_1', 'arm_id': None})
    assert fleet['poll_interval'] == MIN_GRAPH_POLL_INTERVAL
    assert fleet['subscriptions'] is None and fleet['resource_groups'] is None
