# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rules of acknowledging fleet events through ARM."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_approval import (
    validate_selection,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import (
    InvalidParameterError,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils import _se_allowed_vms
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_allowed_vms import foreign_vms
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_fleet_approval import (
    ack_batches,
    ack_list_path,
    ack_path,
    fleet_statuses,
    fleet_wait_satisfied,
    owner_of,
    plan_fleet_approval,
)

A = 'AAAAAAAA-0000-0000-0000-000000000001'
B = 'BBBBBBBB-0000-0000-0000-000000000002'
C = 'CCCCCCCC-0000-0000-0000-000000000003'
D = 'DDDDDDDD-0000-0000-0000-000000000004'


def event(event_id, resources, status='Scheduled', event_type='Reboot', source='Platform', duration=-1):
    return {'event_id': event_id, 'resources': list(resources), 'event_status': status, 'event_type': event_type,
            'event_source': source, 'duration_in_seconds': duration, 'arm_id': '/x/' + event_id}


FLEET = [event(A, ['web-0', 'web-1']), event(B, ['db-0'], status='Started'), event(C, ['web-2'], status='Completed')]


def selection(**options):
    return validate_selection(scope='all', **options)


def reasons(plan):
    return dict((entry['event_id'], entry['reason']) for entry in plan.skipped)


def test_filters_approve_scheduled_skip_started_and_finished():
    plan = plan_fleet_approval(FLEET, selection(event_types=['Reboot']))
    assert plan.approve_ids == [A]
    assert reasons(plan) == {B: 'already_started', C: 'finished'}


def test_vm_names_narrow_filters():
    plan = plan_fleet_approval(FLEET, selection(event_types=['Reboot']), vm_names=['DB-0'])
    assert plan.approve_ids == [] and reasons(plan) == {B: 'already_started'}


def test_foreign_vms_are_skipped_with_filters():
    plan = plan_fleet_approval(FLEET, selection(event_types=['Reboot']), allowed_vms=['web-0'])
    assert plan.approve_ids == []
    assert {'event_id': A, 'reason': 'foreign_vms', 'foreign_vms': ['web-1']} in plan.skipped


def test_foreign_vms_fail_the_task_when_named_by_id():
    with pytest.raises(InvalidParameterError, match='web-1'):
        plan_fleet_approval(FLEET, selection(event_ids=[A]), allowed_vms=['web-0'])
    assert plan_fleet_approval(FLEET, selection(event_ids=[A.lower()]), allowed_vms=['WEB-0', 'web-1']).approve_ids \
        == [A]


def test_foreign_vms_named_by_id_are_skipped_when_asked_and_the_others_acknowledged():
    fleet = [event(A, ['web-0', 'web-1']), event(D, ['db-0'])]
    plan = plan_fleet_approval(fleet, selection(event_ids=[A, D], outside_allowed='skip'), allowed_vms=['web-0', 'db-0'])
    assert plan.approve_ids == [D]
    assert plan.skipped == [{'event_id': A, 'reason': 'foreign_vms', 'foreign_vms': ['web-1']}]
    with pytest.raises(InvalidParameterError, match='outside_allowed: skip'):
        plan_fleet_approval(fleet, selection(event_ids=[A, D]), allowed_vms=['web-0', 'db-0'])


def placed(event_id, resources, group, status='Scheduled'):
    return dict(event(event_id, resources, status=status), subscription_id='sub', resource_group=group)


def test_an_event_without_resources_is_never_released_under_allowed_vms():
    empty = event(A, [])
    plan = plan_fleet_approval([empty], selection(event_types=['Reboot']), allowed_vms=['web-0'])
    assert plan.approve_ids == [] and reasons(plan) == {A: 'foreign_vms'}
    with pytest.raises(InvalidParameterError, match='Resources is empty'):
        plan_fleet_approval([empty], selection(event_ids=[A]), allowed_vms=['web-0'])
    assert plan_fleet_approval([empty], selection(event_types=['Reboot'])).approve_ids == [A]


def test_the_refusal_and_skipped_events_say_what_each_event_names():
    fleet = [event(A, ['web-0', 'web-1', 'db-0']), event(B, [])]
    with pytest.raises(InvalidParameterError) as caught:
        plan_fleet_approval(fleet, selection(event_ids=[A, B]), allowed_vms=['web-0'])
    assert str(caught.value).startswith('event_ids name events that also affect VMs outside allowed_vms: '
                                        '%s (names web-1, db-0); %s (its Resources is empty). ' % (A, B))
    plan = plan_fleet_approval(fleet, selection(event_types=['Reboot']), allowed_vms=['web-0'])
    assert plan.skipped == [{'event_id': A, 'reason': 'foreign_vms', 'foreign_vms': ['web-1', 'db-0']},
                            {'event_id': B, 'reason': 'foreign_vms', 'foreign_vms': ['(Resources is empty)']}]
    assert foreign_vms(event(B, []), ['web-0']) == ['(Resources is empty)']


def test_allowed_vms_are_parsed_once_per_plan(monkeypatch):
    parsed = []

    def parse_arm_vm_id(arm_id):
        parsed.append(arm_id)
        return real_parse(arm_id)

    real_parse = _se_allowed_vms.parse_arm_vm_id
    monkeypatch.setattr(_se_allowed_vms, 'parse_arm_vm_id', parse_arm_vm_id)
    fleet = [event(A, ['web-0']), event(B, ['web-1']), event(C, ['web-2'])]
    plan = plan_fleet_approval(fleet, selection(event_types=['Reboot']), allowed_vms=['web-0', 'web-1'])
    assert plan.approve_ids == [A, B] and parsed == ['web-0', 'web-1']


def test_a_bare_name_found_in_two_resource_groups_allows_neither():
    # VM names are unique only within a resource group: "web-0" could mean
    # either, so only an ARM id says which one may be released.
    fleet = [placed(A, ['web-0'], 'rg-prod'), placed(B, ['web-0'], 'rg-staging')]
    plan = plan_fleet_approval(fleet, selection(event_types=['Reboot']), allowed_vms=['web-0'])
    assert plan.approve_ids == [] and reasons(plan) == {A: 'foreign_vms', B: 'foreign_vms'}
    prod = '/subscriptions/SUB/resourceGroups/RG-PROD/providers/Microsoft.Compute/virtualMachines/web-0'
    plan = plan_fleet_approval(fleet, selection(event_types=['Reboot']), allowed_vms=[prod])
    assert plan.approve_ids == [A] and reasons(plan) == {B: 'foreign_vms'}
    # One resource group read: the bare name is unambiguous.
    assert plan_fleet_approval(fleet[:1], selection(event_types=['Reboot']), allowed_vms=['web-0']).approve_ids == [A]


def test_an_arm_id_allows_its_vm_only_in_its_resource_group():
    prod = '/subscriptions/sub/resourceGroups/rg-prod/providers/Microsoft.Compute/virtualMachines/web-0'
    assert foreign_vms(placed(A, ['web-0', 'web-1'], 'rg-prod'), [prod]) == ['web-1']
    assert foreign_vms(placed(A, ['web-0'], 'rg-staging'), [prod]) == ['web-0']


def test_missing_ids_fail_or_are_gone():
    missing = 'DDDDDDDD-0000-0000-0000-000000000004'
    # Resource Graph keeps finished events: an id it does not list points at
    # the scope, the opt-in or the role, which the message names.
    with pytest.raises(InvalidParameterError, match='not among the events Resource Graph returned') as caught:
        plan_fleet_approval(FLEET, selection(event_ids=[missing]))
    for hint in ('resource_groups', 'scheduledEventsPolicy', 'ScheduledEventContributor', 'missing: ignore'):
        assert hint in str(caught.value)
    plan = plan_fleet_approval(FLEET, selection(event_ids=[missing], missing='ignore'))
    assert reasons(plan) == {missing: 'gone'}


def test_selection_must_be_for_the_whole_fleet():
    with pytest.raises(InvalidParameterError, match='scope all'):
        plan_fleet_approval(FLEET, validate_selection(event_types=['Reboot']))


def test_foreign_vms_compare_without_case():
    assert foreign_vms(event(A, ['Web-0', 'web-1']), ['web-0']) == ['web-1']


@pytest.mark.parametrize('wait, statuses, done', [
    ('started', {A: 'Scheduled'}, False),
    ('started', {A: 'Started', B: 'gone'}, True),
    ('started', {A: 'Canceled'}, True),
    ('completed', {A: 'Started'}, False),
    ('completed', {A: 'Completed', B: 'Canceled', C: 'gone'}, True),
    ('none', {A: 'Scheduled'}, True),
])
def test_wait_goals(wait, statuses, done):
    assert fleet_wait_satisfied(wait, statuses) is done


def test_statuses_by_id_without_case_or_braces():
    assert fleet_statuses(FLEET, ['{%s}' % A.lower(), 'EEEEEEEE-0000-0000-0000-000000000005']) == {
        '{%s}' % A.lower(): 'Scheduled', 'EEEEEEEE-0000-0000-0000-000000000005': 'gone'}


def test_ack_path():
    assert ack_path('/subscriptions/s/x/' + A) == '/subscriptions/s/x/%s/acknowledge' % A


def test_ack_batches_group_events_by_the_resource_owning_their_first_arm_id():
    vm = '/subscriptions/s/resourcegroups/rg/providers/Microsoft.Compute/virtualMachines/vm0'
    scale_set = '/subscriptions/s/resourcegroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/ss'

    def event(event_id, owner):
        return {'event_id': event_id, 'arm_id': owner + '/providers/Microsoft.Maintenance/scheduledevents/' + event_id}

    batches = ack_batches([event('A', vm), event('B', scale_set), event('C', vm.upper())])
    assert [(owner, [item['event_id'] for item in events]) for owner, events in batches] == [
        (vm, ['A', 'C']), (scale_set, ['B'])]
    assert ack_list_path(vm) == vm + '/providers/Microsoft.Maintenance/scheduledevents'
    with pytest.raises(InvalidParameterError, match='not the ARM id'):
        owner_of('/subscriptions/s/resourcegroups/rg')
