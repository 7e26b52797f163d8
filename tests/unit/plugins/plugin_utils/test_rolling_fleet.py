# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fleet plane as the rolling controller's source (plugin_utils/_rolling_fleet.py), fed to the same planner."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_approval import validate_selection
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import (
    InvalidParameterError,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_fleet_approval import (
    plan_fleet_approval,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils import _rolling_controller as rc
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils import _rolling_fleet as rf
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._rolling import build_setup

T0 = 1700000000.0
SUB = '8d10da13-8125-4ba9-a717-bf7490507b3d'
PREFIX = '/subscriptions/%s/resourceGroups/rg-web/providers/Microsoft.Compute' % SUB
OTHER_RG = '/subscriptions/%s/resourceGroups/rg-other/providers/Microsoft.Compute' % SUB
INVENTORY = {'all': ['w0', 'w1', 's3'], 'web': ['w0', 'w1', 's3'], 'ungrouped': []}
# As the azure_rm inventory gives them.
HOSTVARS = {
    'w0': {'name': 'web_0', 'id': PREFIX + '/virtualMachines/web_0'},
    'w1': {'name': 'web_1', 'id': PREFIX + '/virtualMachines/web_1'},
    's3': {'name': 'ss_3', 'id': PREFIX + '/virtualMachineScaleSets/ss/virtualMachines/3'},
}
IDENTITIES = dict((host, rf.host_identity(variables)) for host, variables in HOSTVARS.items())


def row_id(owner, event_id):
    return '%s/providers/Microsoft.Maintenance/scheduledevents/%s' % (owner, event_id)


def fleet_event(event_id, resources, owners, status='Scheduled', event_type='Freeze'):
    """An event as scheduled_events_fleet_info returns it (one ARM id per owning resource)."""
    return {'event_id': event_id, 'event_type': event_type, 'event_status': status, 'event_source': 'Platform',
            'resources': list(resources), 'not_before': '2023-11-14T22:28:20Z', 'duration_in_seconds': 5,
            'description': '', 'arm_ids': [row_id(owner, event_id) for owner in owners]}


def read(*events):
    return {'changed': False, 'events': list(events)}


@pytest.mark.parametrize('value, expected', [
    (PREFIX + '/virtualMachines/Web_0', PREFIX.lower() + '/virtualmachines/web_0'),
    (PREFIX + '/virtualMachineScaleSets/SS/virtualMachines/3/',
     PREFIX.lower() + '/virtualmachinescalesets/ss/virtualmachines/3'),
    (PREFIX + '/virtualMachineScaleSets/ss', None),
    ('web_0', None),
    (None, None),
])
def test_vm_arm_id(value, expected):
    assert rf.vm_arm_id(value) == expected


def test_host_identity_from_azure_rm_and_from_our_variables():
    assert IDENTITIES['s3'] == {'resource_name': 'ss_3',
                                'arm_id': PREFIX.lower() + '/virtualmachinescalesets/ss/virtualmachines/3'}
    # "name" alone is not a VM name: any inventory may have such a variable.
    assert rf.host_identity({'name': 'frontend'}) == {'resource_name': None, 'arm_id': None}
    assert rf.host_identity({'name': 'x', 'azure_scheduled_events_resource_name': 'web_9'}, None) == {
        'resource_name': 'web_9', 'arm_id': None}
    assert rf.host_identity({}, 'web_8')['resource_name'] == 'web_8'


def test_two_hosts_of_one_vm_are_refused():
    problems = rf.check_identities({'a': {'resource_name': 'Web_0'}, 'b': {'resource_name': 'web_0'},
                                    'c': {'resource_name': None}})
    assert len(problems) == 1 and 'a, b' in problems[0]


def test_read_scope_comes_from_the_arm_ids_unless_given():
    assert rf.read_scope(IDENTITIES, {}) == {'subscriptions': [SUB], 'resource_groups': ['rg-web']}
    partial = dict(IDENTITIES, x={'resource_name': 'web_9', 'arm_id': None})
    assert rf.read_scope(partial, {}) == {'subscriptions': [SUB], 'resource_groups': None}
    assert rf.read_scope(IDENTITIES, {'subscriptions': ['s'], 'resource_groups': ['g']}) == {
        'subscriptions': ['s'], 'resource_groups': ['g']}


def test_a_failed_read_leaves_every_host_unknown_and_nothing_gone():
    observation, warnings = rf.fleet_observation({'failed': True, 'msg': 'HTTP 403'}, IDENTITIES, list(HOSTVARS))
    assert observation['events'] == [] and sorted(observation['unknown']) == sorted(HOSTVARS)
    assert not any(info['ok'] for info in observation['hosts'].values())
    assert 'HTTP 403' in warnings[0]


def test_hosts_are_matched_by_name_and_arm_id():
    same_name_elsewhere = fleet_event('E1', ['web_0', 'web_1'], [OTHER_RG + '/virtualMachines/web_0',
                                                                 PREFIX + '/virtualMachines/web_1'])
    scale_set = fleet_event('E2', ['ss_3', 'ss_4'], [PREFIX + '/virtualMachineScaleSets/ss'])
    observation, warnings = rf.fleet_observation(read(same_name_elsewhere, scale_set), IDENTITIES, list(HOSTVARS))
    assert warnings == []
    first, second = observation['events']
    # web_0 of rg-other is not host w0's VM: it stays a VM outside the run.
    assert first['resources'] == [OTHER_RG.lower() + '/virtualmachines/web_0', 'web_1']
    assert first['hosts'] == ['w1'] and first['seen_by'] == ['w1']
    assert second['resources'] == ['ss_3', 'ss_4'] and second['hosts'] == ['s3']
    assert all(info['ok'] for info in observation['hosts'].values())


def test_statuses_only_arm_shows_are_told_as_imds_would():
    started = fleet_event('S', ['web_0'], [PREFIX + '/virtualMachines/web_0'], status='Started')
    over_seen = fleet_event('C1', ['web_1'], [PREFIX + '/virtualMachines/web_1'], status='Completed')
    over_unseen = fleet_event('C2', ['web_1'], [PREFIX + '/virtualMachines/web_1'], status='Completed')
    history = fleet_event('C3', ['web_1'], [PREFIX + '/virtualMachines/web_1'], status='Completed')
    cancelled = fleet_event('X', ['ss_3'], [PREFIX + '/virtualMachineScaleSets/ss'], status='Canceled')
    record = {'times': {'started': None, 'approved': None}}
    state = {'events': {'c1': {'times': {'started': T0, 'approved': None}}, 'c2': record, 'x': record}}
    observation, _warnings = rf.fleet_observation(read(started, over_seen, over_unseen, history, cancelled),
                                                  IDENTITIES, list(HOSTVARS), state)
    shown = dict((event['event_id'], event['event_status']) for event in observation['events'])
    # Completed once seen started: gone, as IMDS drops it; first seen Completed:
    # Started once, so the start is accounted for; never seen live: history.
    assert shown == {'S': 'Started', 'C2': 'Started'}
    # Hosts of a started event have not answered: nothing says their impact is over.
    assert observation['unknown'] == ['w0', 'w1']
    # A Scheduled row may be minutes old: it does not show a drain was in time.
    assert observation['lagging'] is True
    unnamed, warnings = rf.fleet_observation(read(), {'w0': IDENTITIES['w0'], 'x': {'resource_name': None}},
                                             ['w0', 'x'])
    assert unnamed['unknown'] == ['x'] and 'x has no VM name' in warnings[0]


def test_approval_results_from_the_acknowledge_result():
    approve = {'w0': ['A', 'B'], 'w1': ['C', 'D']}
    ack = {'approved': ['a'], 'skipped_events': [{'event_id': 'B', 'reason': 'already_started'},
                                                 {'event_id': 'C', 'reason': 'foreign_vms', 'foreign_vms': ['web_1']}],
           'failed': True, 'msg': 'HTTP 500'}
    results = rf.approval_results(approve, ack, T0)
    assert results['approve']['A'] == '' and results['approved_at'] == {'A': T0}
    assert results['approve']['B'] == '' and results['not_approved'] == ['B']
    assert results['approve']['C'] == ('not acknowledged through ARM: refused: it now names web_1, outside allowed_vms '
                                       '(the VMs it named when the round read it)')
    assert 'HTTP 500' in results['approve']['D']


def test_without_approvals_keeps_every_other_action():
    actions = {'approve': {'w0': ['A']}, 'drain': ['w1'], 'verify': [], 'undrain': [],
               'hosts': {'w0': {'approve': ['A'], 'drain': False, 'verify': False, 'undrain': False},
                         'w1': {'approve': [], 'drain': True, 'verify': False, 'undrain': False}}}
    stripped = rf.without_approvals(actions)
    assert stripped['approve'] == {} and list(stripped['hosts']) == ['w1'] and stripped['drain'] == ['w1']


def test_the_planner_never_approves_an_event_naming_a_same_named_vm_elsewhere():
    setup = build_setup(['web'], INVENTORY, INVENTORY['all'], group_settings={'web': {'max_unavailable': 2}},
                        host_overrides=dict((host, {'resource_name': identity['resource_name']})
                                            for host, identity in IDENTITIES.items()))
    mixed = fleet_event('E1', ['web_0', 'web_1'], [OTHER_RG + '/virtualMachines/web_0',
                                                   PREFIX + '/virtualMachines/web_1'])
    mine = fleet_event('E2', ['web_0'], [PREFIX + '/virtualMachines/web_0'], event_type='Reboot')
    options = {'drain_lead_seconds': 10 ** 9}
    observation, _warnings = rf.fleet_observation(read(mixed, mine), IDENTITIES, list(HOSTVARS))
    plan = rc.reconcile(None, observation, None, T0, setup, options)
    assert sorted(plan['actions']['drain']) == ['w0', 'w1']
    plan = rc.reconcile(plan['state'], None, {'drain': {'w0': '', 'w1': ''}}, T0 + 1, setup, options)
    assert plan['actions']['approve'] == {'w0': ['E2']}
    assert plan['state']['events']['e1']['state'] == rc.AWAITING_START


@pytest.mark.parametrize('hosts, expected', [
    ({}, []),
    # A host that approves nothing this round releases nothing.
    ({'w1': {'approve': [], 'allowed_vms': ['web_1']}}, []),
    # The run's VMs by their ARM ids; a scale-set instance, whose id allowed_vms cannot pin, and a VM outside the
    # run by their names; each once.
    ({'w0': {'approve': ['E1'], 'allowed_vms': ['partner_0', 'web_0']},
      's3': {'approve': ['E2', 'E3'], 'allowed_vms': ['ss_3', 'Web_0']}},
     sorted([PREFIX.lower() + '/virtualmachines/web_0', 'partner_0', 'ss_3'])),
    # A host without an ARM id by its name.
    ({'x': {'approve': ['E4'], 'allowed_vms': ['web_9']}}, ['web_9']),
])
def test_an_acknowledgement_releases_what_its_events_named_when_read(hosts, expected):
    identities = dict(IDENTITIES, x={'resource_name': 'web_9', 'arm_id': None})
    assert rf.acknowledgeable_vms({'hosts': hosts}, identities) == expected


def _as_read_by_the_acknowledgement(event, group='rg-web'):
    return dict(event, subscription_id=SUB, resource_group=group)


SHARED = 'E6000000-0000-4000-8000-000000000001'
SCALE_SET = 'E6000000-0000-4000-8000-000000000002'
NAMESAKE = 'E6000000-0000-4000-8000-000000000003'


def test_the_acknowledgement_refuses_an_event_azure_grew_and_sends_one_with_an_allowed_vm_outside_the_run():
    """The planner approves E1 (web_0 and partner_0, which the user allowed) and E2 (ss_3). The acknowledgement
    may release just those VMs: once Azure adds web_1 (in service) to E1, it refuses the task; a namesake of
    web_0 in another resource group does not make web_0 ambiguous, as the host's VM goes by its ARM id."""
    setup = build_setup(['web'], INVENTORY, INVENTORY['all'], group_settings={'web': {'max_unavailable': 3}},
                        host_overrides=dict((host, {'resource_name': identity['resource_name']})
                                            for host, identity in IDENTITIES.items()))
    shared = fleet_event(SHARED, ['web_0', 'partner_0'],
                         [PREFIX + '/virtualMachines/web_0', PREFIX + '/virtualMachines/partner_0'])
    scale_set = fleet_event(SCALE_SET, ['ss_3'], [PREFIX + '/virtualMachineScaleSets/ss'], event_type='Reboot')
    options = {'drain_lead_seconds': 10 ** 9, 'allow_foreign_resources': True}
    observation, _warnings = rf.fleet_observation(read(shared, scale_set), IDENTITIES, list(HOSTVARS))
    plan = rc.reconcile(None, observation, None, T0, setup, options)
    assert sorted(plan['actions']['drain']) == ['s3', 'w0']
    plan = rc.reconcile(plan['state'], None, {'drain': {'w0': '', 's3': ''}}, T0 + 1, setup, options)
    assert sorted(plan['actions']['approve'].values()) == sorted([[SHARED], [SCALE_SET]])
    allowed = rf.acknowledgeable_vms(plan['actions'], IDENTITIES)
    selection = validate_selection(scope='all', event_ids=[SHARED, SCALE_SET])
    namesake = _as_read_by_the_acknowledgement(
        fleet_event(NAMESAKE, ['web_0'], [OTHER_RG + '/virtualMachines/web_0']), group='rg-other')
    as_read = [_as_read_by_the_acknowledgement(shared), _as_read_by_the_acknowledgement(scale_set), namesake]
    assert [event['event_id'] for event in plan_fleet_approval(as_read, selection, allowed_vms=allowed).approve] == [
        SHARED, SCALE_SET]
    grown = dict(as_read[0], resources=['web_0', 'partner_0', 'web_1'])
    with pytest.raises(InvalidParameterError, match=SHARED + ' [(]names web_1[)]'):
        plan_fleet_approval([grown] + as_read[1:], selection, allowed_vms=allowed)
