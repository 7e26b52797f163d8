# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the approval selection and wait logic (_se_approval)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils import _se_approval as approval
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_document import parse_document
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import InvalidParameterError

FIXTURES = os.path.join(os.path.dirname(__file__), 'fixtures', 'approval')

FREEZE_SHARED = 'C7061BAC-AFDC-4513-B24B-AA5F13A16123'  # Freeze, Resources [WestNO_0, WestNO_1], 5 s
USER_REBOOT = 'f020ba2e-3bc0-4c40-a10b-86575a9eabd5'  # User Reboot, Resources [WestNO_1, WestNO_0], -1
HARDWARE_REBOOT = '5A2B1E3C-0D4F-4E6A-8B9C-1D2E3F4A5B6C'  # Started Reboot of WestNO_0 only
OTHER_VM_FREEZE = '9E8D7C6B-5A4F-4E3D-9C2B-1A0F9E8D7C6B'  # Freeze of WestNO_2 only, 9 s
PREEMPT = '0B1C2D3E-4F5A-4B6C-8D7E-9F0A1B2C3D4E'  # Preempt of "westno_0" (other case), 0 s
ABSENT = '11111111-2222-4333-8444-555555555555'


def load_document(name, api_version='2020-07-01'):
    with open(os.path.join(FIXTURES, name)) as handle:
        return parse_document(json.load(handle), api_version)


@pytest.fixture
def document():
    return load_document('mixed_document.json')


def plan(document, resource_name='WestNO_0', **options):
    selection = approval.validate_selection(**options)
    return approval.plan_approval(document['events'], resource_name, selection,
                                  document_incarnation=document['document_incarnation'])


def reasons(result):
    return dict((entry['event_id'], entry['reason']) for entry in result.skipped)


# --- validation before any request -------------------------------------------------------------

def test_neither_ids_nor_filters_is_refused_with_the_way_to_ask_for_everything():
    with pytest.raises(InvalidParameterError) as caught:
        approval.validate_selection()
    assert 'must be asked for explicitly' in caught.value.message
    assert 'event_types: [Freeze, Reboot, Redeploy, Preempt, Terminate]' in caught.value.message


@pytest.mark.parametrize('empty', [[], None])
def test_empty_lists_count_as_no_selection(empty):
    with pytest.raises(InvalidParameterError):
        approval.validate_selection(event_ids=empty, event_types=empty, event_sources=empty)


@pytest.mark.parametrize('bad', ['not-a-guid', 'C7061BAC-AFDC-4513-B24B-AA5F13A1612', '', 'C7061BAC AFDC 4513 B24B AA5F13A16123'])
def test_malformed_ids_are_refused_and_named(bad):
    with pytest.raises(InvalidParameterError) as caught:
        approval.validate_selection(event_ids=[USER_REBOOT, bad])
    assert repr(bad) in caught.value.message
    assert USER_REBOOT not in caught.value.message


def test_ids_in_any_case_and_braces_are_accepted_and_deduplicated():
    selection = approval.validate_selection(event_ids=[FREEZE_SHARED.lower(), FREEZE_SHARED, '{%s}' % FREEZE_SHARED,
                                                       USER_REBOOT.upper()])
    assert selection.event_ids == [FREEZE_SHARED.lower(), USER_REBOOT.upper()]
    assert not selection.uses_filters


@pytest.mark.parametrize('filters', [{'event_types': ['Freeze']}, {'event_sources': ['User']}, {'max_duration': 0}])
def test_ids_and_filters_cannot_be_mixed(filters):
    with pytest.raises(InvalidParameterError) as caught:
        approval.validate_selection(event_ids=[FREEZE_SHARED], **filters)
    assert 'cannot be combined' in caught.value.message


@pytest.mark.parametrize('bad', [-1, -100, True, 1.5, '10'])
def test_max_duration_must_be_a_non_negative_integer(bad):
    with pytest.raises(InvalidParameterError) as caught:
        approval.validate_selection(max_duration=bad)
    assert 'max_duration' in caught.value.message


def test_unknown_filter_values_are_refused_with_the_known_ones():
    with pytest.raises(InvalidParameterError) as caught:
        approval.validate_selection(event_types=['Freeze', 'Reboots'])
    assert "'Reboots'" in caught.value.message and 'Terminate' in caught.value.message
    with pytest.raises(InvalidParameterError) as caught:
        approval.validate_selection(event_sources=['Customer'])
    assert "'Customer'" in caught.value.message and 'Platform, User' in caught.value.message


def test_filter_values_are_matched_without_case():
    selection = approval.validate_selection(event_types=['freeze', 'FREEZE', 'reboot'], event_sources=['user'])
    assert selection.event_types == ['Freeze', 'Reboot']
    assert selection.event_sources == ['User']


@pytest.mark.parametrize('option,value', [('scope', 'everything'), ('missing', 'skip'), ('outside_allowed', 'ignore')])
def test_unknown_scope_or_missing_mode_is_refused(option, value):
    with pytest.raises(InvalidParameterError) as caught:
        approval.validate_selection(event_types=['Freeze'], **{option: value})
    assert option in caught.value.message


@pytest.mark.parametrize('options, fails', [
    ({'event_ids': [FREEZE_SHARED]}, True),
    ({'event_ids': [FREEZE_SHARED], 'outside_allowed': 'fail'}, True),
    ({'event_ids': [FREEZE_SHARED], 'outside_allowed': 'skip'}, False),
    ({'event_types': ['Freeze']}, False),
    ({'event_types': ['Freeze'], 'outside_allowed': 'fail'}, False),
])
def test_an_event_outside_allowed_vms_fails_the_task_only_when_named_by_id_and_not_asked_to_skip(options, fails):
    assert approval.validate_selection(**options).fails_outside_allowed is fails


# --- selection by id ---------------------------------------------------------------------------

def test_explicit_ids_are_approved_spelled_as_the_document_spells_them(document):
    result = plan(document, event_ids=[FREEZE_SHARED.lower(), USER_REBOOT.upper()])
    assert result.approve_ids == [FREEZE_SHARED, USER_REBOOT]
    assert result.skipped == []


def test_missing_id_fails_by_default_naming_it_and_the_incarnation(document):
    with pytest.raises(InvalidParameterError) as caught:
        plan(document, event_ids=[FREEZE_SHARED, ABSENT])
    assert ABSENT in caught.value.message
    assert FREEZE_SHARED not in caught.value.message
    assert 'DocumentIncarnation 7' in caught.value.message
    assert 'missing: ignore' in caught.value.message


def test_missing_id_is_skipped_as_gone_when_ignored(document):
    result = plan(document, event_ids=[ABSENT, FREEZE_SHARED], missing='ignore')
    assert result.approve_ids == [FREEZE_SHARED]
    assert result.skipped == [{'event_id': ABSENT, 'reason': 'gone'}]


def test_explicit_id_of_another_vm_is_skipped_with_scope_this_vm(document):
    result = plan(document, event_ids=[OTHER_VM_FREEZE])
    assert result.approve_ids == []
    assert reasons(result) == {OTHER_VM_FREEZE: 'not_this_vm'}


def test_explicit_id_of_another_vm_is_approved_with_scope_all(document):
    result = plan(document, event_ids=[OTHER_VM_FREEZE], scope='all')
    assert result.approve_ids == [OTHER_VM_FREEZE]


def test_started_event_is_skipped_as_already_started(document):
    result = plan(document, event_ids=[HARDWARE_REBOOT, FREEZE_SHARED])
    assert result.approve_ids == [FREEZE_SHARED]
    assert reasons(result) == {HARDWARE_REBOOT: 'already_started'}


def test_resource_name_is_matched_without_case(document):
    result = plan(document, resource_name='WESTNO_0', event_ids=[PREEMPT], leader_only=True)
    assert result.approve_ids == [PREEMPT]


# --- leadership ---------------------------------------------------------------------------------

def test_leader_only_approves_where_this_vm_is_first_in_resources(document):
    leader = plan(document, resource_name='WestNO_0', event_ids=[FREEZE_SHARED, USER_REBOOT], leader_only=True)
    follower = plan(document, resource_name='WestNO_1', event_ids=[FREEZE_SHARED, USER_REBOOT], leader_only=True)
    assert leader.approve_ids == [FREEZE_SHARED]
    assert reasons(leader) == {USER_REBOOT: 'not_leader'}
    assert follower.approve_ids == [USER_REBOOT]
    assert reasons(follower) == {FREEZE_SHARED: 'not_leader'}


def test_every_event_is_approved_by_exactly_one_vm_of_the_fleet(document):
    fleet = ['WestNO_0', 'WestNO_1', 'WestNO_2']
    approvers = {}
    for vm in fleet:
        for event_id in plan(document, resource_name=vm, event_types=['Freeze', 'Reboot', 'Preempt'],
                             leader_only=True).approve_ids:
            approvers.setdefault(event_id, []).append(vm)
    assert approvers == {FREEZE_SHARED: ['WestNO_0'], USER_REBOOT: ['WestNO_1'], OTHER_VM_FREEZE: ['WestNO_2'],
                         PREEMPT: ['WestNO_0']}


def test_not_leader_wins_over_already_started_so_followers_report_the_same_whatever_the_timing(document):
    started = json.loads(json.dumps(document))
    for event in started['events']:
        if event['event_id'] == FREEZE_SHARED:
            event['event_status'] = 'Started'
    follower = plan(started, resource_name='WestNO_1', event_ids=[FREEZE_SHARED], leader_only=True)
    leader = plan(started, resource_name='WestNO_0', event_ids=[FREEZE_SHARED], leader_only=True)
    assert reasons(follower) == {FREEZE_SHARED: 'not_leader'}
    assert reasons(leader) == {FREEZE_SHARED: 'already_started'}


def test_leader_only_with_scope_all_still_needs_leadership(document):
    result = plan(document, resource_name='WestNO_0', event_ids=[OTHER_VM_FREEZE], scope='all', leader_only=True)
    assert reasons(result) == {OTHER_VM_FREEZE: 'not_leader'}


def test_event_without_resources_has_no_leader():
    events = [{'event_id': FREEZE_SHARED, 'event_status': 'Scheduled', 'resources': []}]
    selection = approval.validate_selection(event_ids=[FREEZE_SHARED], scope='all', leader_only=True)
    assert reasons(approval.plan_approval(events, 'WestNO_0', selection)) == {FREEZE_SHARED: 'not_leader'}


# --- selection by filters ---------------------------------------------------------------------

def test_type_filter_takes_this_vms_events_in_document_order(document):
    result = plan(document, event_types=['Freeze', 'Reboot'])
    assert result.approve_ids == [FREEZE_SHARED, USER_REBOOT]
    # The other VM's Freeze is not a candidate at all; the event without id is never listed.
    assert reasons(result) == {HARDWARE_REBOOT: 'already_started'}


def test_type_filter_with_scope_all_takes_other_vms_events(document):
    result = plan(document, event_types=['Freeze'], scope='all')
    assert result.approve_ids == [FREEZE_SHARED, OTHER_VM_FREEZE]


def test_source_filter(document):
    assert plan(document, event_sources=['User']).approve_ids == [USER_REBOOT]
    assert plan(document, event_sources=['Platform']).approve_ids == [FREEZE_SHARED, PREEMPT]


@pytest.mark.parametrize('max_duration,expected', [
    (0, [PREEMPT]),
    (4, [PREEMPT]),
    (5, [FREEZE_SHARED, PREEMPT]),
    (100000, [FREEZE_SHARED, PREEMPT]),
])
def test_max_duration_is_inclusive_and_never_takes_unknown_durations(document, max_duration, expected):
    result = plan(document, max_duration=max_duration)
    assert result.approve_ids == expected
    assert USER_REBOOT not in result.approve_ids  # DurationInSeconds -1


def test_filters_combine(document):
    both_freezes = plan(document, event_types=['Freeze'], max_duration=9, scope='all')
    assert both_freezes.approve_ids == [FREEZE_SHARED, OTHER_VM_FREEZE]
    assert plan(document, event_types=['Reboot'], event_sources=['Platform']).approve_ids == []


def test_fields_absent_from_older_api_versions_never_match():
    old = load_document('old_api_document.json', api_version='2019-04-01')
    assert plan(old, event_sources=['Platform']).approve_ids == []
    assert plan(old, max_duration=3600).approve_ids == []
    assert plan(old, event_types=['Freeze']).approve_ids == [FREEZE_SHARED]


def test_filters_with_leader_only_skip_followers(document):
    result = plan(document, resource_name='WestNO_1', event_types=['Freeze', 'Reboot'], leader_only=True)
    assert result.approve_ids == [USER_REBOOT]
    assert reasons(result) == {FREEZE_SHARED: 'not_leader'}


def test_empty_document_approves_nothing():
    selection = approval.validate_selection(event_types=['Freeze'])
    result = approval.plan_approval([], 'WestNO_0', selection)
    assert result.approve == [] and result.skipped == []


# --- races and waiting ----------------------------------------------------------------------

def test_drop_gone_moves_vanished_events_to_skipped(document):
    result = plan(document, event_ids=[FREEZE_SHARED, USER_REBOOT, ABSENT], missing='ignore')
    remaining = [dict(event, resources=event['resources'] + ['added_since'])
                 for event in document['events'] if event['event_id'] != USER_REBOOT]
    narrowed = approval.drop_gone(result, remaining)
    assert narrowed.approve_ids == [FREEZE_SHARED]
    # Kept as the new read shows it: a second request releases it as it is now.
    assert narrowed.approve[0]['resources'][-1] == 'added_since'
    assert narrowed.skipped == [{'event_id': ABSENT, 'reason': 'gone'}, {'event_id': USER_REBOOT, 'reason': 'gone'}]


def test_ids_to_follow_are_the_approved_and_the_already_started(document):
    result = plan(document, event_ids=[HARDWARE_REBOOT, FREEZE_SHARED, ABSENT, OTHER_VM_FREEZE], missing='ignore')
    assert approval.ids_to_follow(result) == [FREEZE_SHARED, HARDWARE_REBOOT]


def test_event_statuses_report_gone_for_absent_ids(document):
    statuses = approval.event_statuses(document['events'], [FREEZE_SHARED.lower(), HARDWARE_REBOOT, ABSENT])
    assert statuses == {FREEZE_SHARED.lower(): 'Scheduled', HARDWARE_REBOOT: 'Started', ABSENT: 'gone'}


@pytest.mark.parametrize('wait,statuses,expected', [
    ('none', {'a': 'Scheduled'}, True),
    ('started', {'a': 'Started', 'b': 'gone'}, True),
    ('started', {'a': 'Started', 'b': 'Scheduled'}, False),
    ('started', {}, True),
    ('completed', {'a': 'gone', 'b': 'gone'}, True),
    ('completed', {'a': 'gone', 'b': 'Started'}, False),
])
def test_wait_goals(wait, statuses, expected):
    assert approval.wait_satisfied(wait, statuses) is expected


def test_unknown_wait_goal_is_refused():
    with pytest.raises(InvalidParameterError):
        approval.wait_satisfied('finished', {})


def test_wait_condition_reads_normalized_documents(document):
    started = approval.wait_condition('started', [HARDWARE_REBOOT, ABSENT])
    completed = approval.wait_condition('completed', [HARDWARE_REBOOT])
    assert started(document) is True
    assert completed(document) is False
    assert completed({'document_incarnation': 8, 'events': []}) is True


def test_describe_statuses_names_each_event_and_its_not_before(document):
    text = approval.describe_statuses(document, [FREEZE_SHARED, HARDWARE_REBOOT, ABSENT])
    assert text == ('DocumentIncarnation 7: %s Scheduled (NotBefore Mon, 11 Apr 2022 22:26:58 GMT); %s Started; '
                    '%s gone' % (FREEZE_SHARED, HARDWARE_REBOOT, ABSENT))
