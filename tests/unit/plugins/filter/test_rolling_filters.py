# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The filters at the rolling controller's edge: reading hostvars, results and the clock."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import time

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.azure_maintenance.scheduled_events.plugins.filter.rolling import (
    rolling_reconcile,
    rolling_report,
    rolling_results,
    rolling_setup,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.filter.rolling_fleet import (
    rolling_fleet_allowed_vms,
)

INVENTORY = {'all': ['h0', 'h1'], 'web': ['h0', 'h1'], 'ungrouped': []}
EVENT = {'event_id': 'C7061BAC-AFDC-4513-B24B-AA5F13A16123', 'event_type': 'Freeze', 'event_status': 'Scheduled',
         'event_source': 'Platform', 'resources': ['vm_0'], 'not_before': '2030-01-01T00:00:00Z',
         'duration_in_seconds': 5}
ARM_WEB_0 = '/subscriptions/s/resourcegroups/rg/providers/microsoft.compute/virtualmachines/web_0'


def info(name, events=()):
    return {'changed': False, 'resource_name': name, 'events': list(events)}


def setup(hostvars=None):
    result = rolling_setup(['web'], INVENTORY, ['h0', 'h1'], hostvars=hostvars)
    assert result['problems'] == []
    return result


def test_setup_reads_task_files_names_and_variable_names_from_hostvars():
    hostvars = {'h0': {'rolling_verify_tasks': None, 'azure_scheduled_events_resource_name': 'vm_0'},
                'h1': {'rolling_aprove': True, 'max_unavailable': 2}}
    result = rolling_setup(['web'], INVENTORY, ['h0', 'h1'], hostvars=hostvars)
    assert result['hosts']['h0']['resource_name'] == 'vm_0'
    assert any('rolling_aprove (did you mean rolling_approve?)' in problem for problem in result['problems'])
    assert any(warning.startswith('max_unavailable is set as a variable') for warning in result['warnings'])


def test_setup_refuses_a_run_wide_variable_that_one_host_sets_differently(tmp_path):
    # A host's own verify task file may differ; where events come from may not.
    verify = tmp_path / 'verify.yml'
    verify.write_text('---\n[]\n')
    hostvars = {'h0': {'rolling_source': 'imds', 'rolling_verify_tasks': str(verify)},
                'h1': {'rolling_source': 'resource_graph'}}
    result = rolling_setup(['web'], INVENTORY, ['h0', 'h1'], hostvars=hostvars)
    assert [problem.split('; it applies')[0] for problem in result['problems']] == [
        "rolling_source differs between hosts ('imds' on h0; 'resource_graph' on h1)"]
    hostvars['h1']['rolling_source'] = 'imds'
    result = rolling_setup(['web'], INVENTORY, ['h0', 'h1'], hostvars=hostvars)
    assert result['problems'] == []
    assert result['hosts']['h0']['verify_tasks'] == str(verify)


def test_reconcile_reads_the_hosts_that_answer():
    hostvars = {'h0': {'info': info('vm_0', [EVENT])}, 'h1': {'info': {'failed': True, 'msg': 'timed out'}}}
    out = rolling_reconcile(None, setup(), {}, hostvars=hostvars, result_key='info', answering=['h0', 'h1'], now=100)
    assert out['unknown'] == ['h1']
    assert out['actions']['drain'] == ['h0']
    assert out['now'] == 100.0


def test_a_host_out_of_the_play_is_unknown_whatever_it_registered_before():
    hostvars = {'h0': {'info': info('vm_0', [EVENT])}, 'h1': {'info': info('vm_1')}}
    out = rolling_reconcile(None, setup(), {}, hostvars=hostvars, result_key='info', answering=['h0'], now=100)
    assert out['unknown'] == ['h1']


@pytest.mark.parametrize('now, expected', [
    (datetime.datetime(1970, 1, 1, 0, 1, 40, tzinfo=datetime.timezone.utc), 100.0), ('100.5', 100.5), (7, 7.0)])
def test_now_may_be_a_datetime_a_number_or_a_string(now, expected):
    assert rolling_reconcile(None, setup(), now=now)['now'] == expected


def test_results_report_missing_answers_as_errors_and_approval_times():
    actions = {'hosts': {'h0': {'drain': True, 'verify': False, 'approve': ['E1', 'E2'], 'undrain': False},
                         'h1': {'drain': True, 'verify': False, 'approve': [], 'undrain': True}}}
    hostvars = {'h0': {'_rolling_step': {'drain': '', 'approve': '', 'approved_at': '123.5'}}, 'h1': {}}
    assert rolling_results(actions, hostvars, 'prepare') == {
        'drain': {'h0': '', 'h1': 'no result from h1 (unreachable, or its tasks were interrupted)'}, 'verify': {}}
    released = rolling_results(actions, hostvars, 'release')
    assert released['approve'] == {'E1': '', 'E2': ''}
    assert released['approved_at'] == {'E1': 123.5, 'E2': 123.5}
    assert released['undrain'] == {'h1': 'no result from h1 (unreachable, or its tasks were interrupted)'}


def test_an_event_the_approve_task_left_alone_is_not_approved():
    # The task reports approved_ids: what it POSTed. An asked event missing
    # there had already started (or gone) when the task read the document.
    actions = {'hosts': {'h0': {'drain': False, 'verify': False, 'approve': ['E1', 'E2'], 'undrain': False}}}
    hostvars = {'h0': {'_rolling_step': {'approve': '', 'approved_at': '123.5', 'approved_ids': ['e1']}}}
    released = rolling_results(actions, hostvars, 'release')
    assert released['approve'] == {'E1': '', 'E2': ''}
    assert released['approved_at'] == {'E1': 123.5} and released['not_approved'] == ['E2']


def test_an_event_the_approve_task_refused_is_an_error_of_its_own():
    # With outside_allowed: skip the task approves the leader's other events
    # and lists the one Azure added a VM to among its skipped events.
    actions = {'hosts': {'h0': {'drain': False, 'verify': False, 'approve': ['E1', 'E2'], 'undrain': False}}}
    refused = {'event_id': 'e2', 'reason': 'foreign_vms', 'foreign_vms': ['vm_3']}
    hostvars = {'h0': {'_rolling_step': {'approve': '', 'approved_at': '123.5', 'approved_ids': ['E1'],
                                         'refused': [refused]}}}
    released = rolling_results(actions, hostvars, 'release')
    assert released['approve'] == {
        'E1': '', 'E2': 'refused: it now names vm_3, outside allowed_vms (the VMs it named when the round read it)'}
    assert released['approved_at'] == {'E1': 123.5} and 'not_approved' not in released


def test_approval_time_is_when_the_post_was_answered():
    hostvars = {'h0': {'info': info('vm_0', [EVENT])}, 'h1': {'info': info('vm_1')}}
    first = rolling_reconcile(None, setup(), {}, hostvars=hostvars, result_key='info', answering=['h0', 'h1'], now=100)
    second = rolling_reconcile(first['state'], setup(), {}, results={'drain': {'h0': ''}}, now=101)
    assert second['actions']['approve'] == {'h0': [EVENT['event_id']]}
    third = rolling_reconcile(second['state'], setup(), {}, hostvars=hostvars, result_key='info',
                              answering=['h0', 'h1'], results={'approve': {EVENT['event_id']: ''},
                                                               'approved_at': {EVENT['event_id']: 102.5}}, now=110)
    record = list(third['state']['events'].values())[0]
    assert record['times']['approved'] == 102.5


def test_participants_are_the_hosts_asked_and_the_approvers_of_events_being_drained():
    setup_ = rolling_setup(['web'], INVENTORY, ['h0', 'h1'], group_settings={'web': {'max_unavailable': 2}})
    options = {'drain_lead_seconds': 10 ** 9}
    quiet = {'h0': {'info': info('vm_0')}, 'h1': {'info': info('vm_1')}}
    idle = rolling_reconcile(None, setup_, options, hostvars=quiet, result_key='info', answering=['h0', 'h1'], now=100)
    assert idle['participants'] == []
    # h1 is still out (drained for an earlier event) when an event led by its VM names h0 too: only h0 is
    # asked to drain, and h1, the approver, takes part in the round to approve it once h0 is drained.
    state = idle['state']
    state['hosts']['h1'] = {'drained': True, 'deleted': False, 'error': None, 'drain_started': 90.0}
    event = dict(EVENT, resources=['vm_1', 'vm_0'])
    hostvars = {'h0': {'info': info('vm_0', [event])}, 'h1': {'info': info('vm_1', [event])}}
    plan = rolling_reconcile(state, setup_, options, hostvars=hostvars, result_key='info', answering=['h0', 'h1'],
                             now=101)
    assert sorted(plan['actions']['hosts']) == ['h0']
    assert plan['participants'] == ['h0', 'h1']
    released = rolling_reconcile(plan['state'], setup_, options, results={'drain': {'h0': ''}}, now=102)
    assert released['actions']['approve'] == {'h1': [EVENT['event_id']]}


def test_bad_input_says_what_is_expected():
    with pytest.raises(AnsibleFilterError, match='result of the rolling_setup filter'):
        rolling_reconcile(None, {'problems': []})
    with pytest.raises(AnsibleFilterError, match='phase must be one of'):
        rolling_results({}, {}, 'finish')
    with pytest.raises(AnsibleFilterError, match='hostvars must be given'):
        rolling_reconcile(None, setup(), result_key='info')


def test_a_run_without_events_lasts_until_the_report_is_written():
    report = rolling_report({'events': {}}, {'started': '%.3f' % (time.time() - 30), 'finished': None})
    assert 29 <= report['run']['wall_seconds'] <= 600
    assert report['run']['summary'] == 'succeeded: 0 event(s)'


def test_rolling_fleet_allowed_vms_reads_the_plan_and_the_hosts_identities():
    fleet = {'identities': {'w0': {'resource_name': 'web_0', 'arm_id': ARM_WEB_0}}}
    plan = {'actions': {'hosts': {'w0': {'approve': ['A'], 'allowed_vms': ['web_0', 'partner_0']}}}}
    assert rolling_fleet_allowed_vms(plan, fleet) == [ARM_WEB_0, 'partner_0']
    with pytest.raises(AnsibleFilterError, match='must be a plan of the rolling planner'):
        rolling_fleet_allowed_vms({'state': {}}, fleet)
