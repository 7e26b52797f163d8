# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Selecting, annotating and diffing normalized events."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_document import parse_document
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_select import (
    affects,
    annotate_event,
    annotate_events,
    became_started,
    diff_events,
    event_id_key,
    events_affecting,
    filter_events,
    find_event,
    is_event_id,
    is_leader,
    is_pending,
    leader_of,
    maintenance_pending,
    same_resource,
)

FREEZE_ID = 'C7061BAC-AFDC-4513-B24B-AA5F13A16123'
REBOOT_ID = '1ab2c3d4-0000-4e5f-8a9b-0c1d2e3f4a5b'
PREEMPT_ID = 'a1b2c3d4-e5f6-4789-abcd-ef0123456789'
TERMINATE_ID = 'f020ba2e-3bc0-4c40-a10b-86575a9eabd5'
# Mon, 11 Apr 2022 22:26:58 GMT
FREEZE_NOT_BEFORE_EPOCH = 1649716018


@pytest.fixture
def events(fixture_json):
    return parse_document(fixture_json('document_2020-07-01.json'))['events']


@pytest.fixture
def westno(fixture_json):
    return [parse_document(fixture_json('westno_incarnation_%d.json' % number))['events'] for number in (1, 2, 3, 4)]


def ids(events):
    return [event['event_id'] for event in events]


@pytest.mark.parametrize('text', [
    FREEZE_ID, FREEZE_ID.lower(), 'c7061bac-AFDC-4513-b24b-AA5F13A16123', '{%s}' % FREEZE_ID, ' %s ' % FREEZE_ID,
])
def test_event_ids_of_any_case_are_ids(text):
    assert is_event_id(text)


@pytest.mark.parametrize('text', [
    '', 'Freeze', FREEZE_ID[:-1], FREEZE_ID + '0', FREEZE_ID.replace('-', ''), FREEZE_ID.replace('C', 'G'),
    '{%s' % FREEZE_ID, '%s}' % FREEZE_ID, '{{%s}}' % FREEZE_ID, FREEZE_ID + '\n' + FREEZE_ID, None, 42,
    [FREEZE_ID],
])
def test_other_values_are_not_event_ids(text):
    assert not is_event_id(text)


def test_event_id_key_ignores_case_and_braces():
    assert event_id_key('{%s}' % FREEZE_ID) == event_id_key(FREEZE_ID.lower()) == FREEZE_ID.lower()
    assert event_id_key(None) is None


def test_same_resource_ignores_case_only():
    assert same_resource('WestNO_0', 'westno_0')
    assert not same_resource('WestNO_0', 'WestNO_01')
    assert not same_resource(None, None)
    assert not same_resource('WestNO_0', None)


def test_affects_and_events_affecting(events):
    assert affects(events[0], 'westno_1')
    assert not affects(events[0], 'WestNO_2')
    assert not affects({'resources': []}, 'WestNO_0')
    assert not affects({}, 'WestNO_0')
    assert ids(events_affecting(events, 'WESTNO_0')) == [FREEZE_ID]
    assert ids(events_affecting(events, 'myscaleset_3')) == [TERMINATE_ID]
    assert events_affecting(events, 'other-vm') == []


def test_leader_is_the_first_resource(events):
    assert leader_of(events[0]) == 'WestNO_0'
    assert leader_of({'resources': []}) is None
    assert leader_of({}) is None
    assert is_leader(events[0], 'westno_0')
    assert not is_leader(events[0], 'WestNO_1')
    assert not is_leader({'resources': []}, 'WestNO_0')


@pytest.mark.parametrize('filters, expected', [
    ({}, [FREEZE_ID, REBOOT_ID, PREEMPT_ID, TERMINATE_ID]),
    ({'event_types': []}, [FREEZE_ID, REBOOT_ID, PREEMPT_ID, TERMINATE_ID]),
    ({'event_types': ['freeze']}, [FREEZE_ID]),
    ({'event_types': ['FREEZE', 'Terminate']}, [FREEZE_ID, TERMINATE_ID]),
    ({'event_types': 'Reboot'}, [REBOOT_ID]),
    ({'event_statuses': ['started']}, [REBOOT_ID]),
    ({'event_statuses': ['Scheduled']}, [FREEZE_ID, PREEMPT_ID, TERMINATE_ID]),
    ({'event_sources': ['user']}, [REBOOT_ID, TERMINATE_ID]),
    ({'event_sources': ['Platform'], 'event_statuses': ['SCHEDULED']}, [FREEZE_ID, PREEMPT_ID]),
    ({'event_types': ['Freeze'], 'event_sources': ['User']}, []),
    ({'event_types': ['Unknown']}, []),
])
def test_filter_events(events, filters, expected):
    assert ids(filter_events(events, **filters)) == expected


def test_event_without_source_never_matches_a_source_filter(fixture_json):
    old = parse_document(fixture_json('document_2019-04-01.json'), '2019-04-01')['events']
    assert filter_events(old, event_sources=['Platform']) == []
    assert len(filter_events(old, event_sources=None)) == len(old)


def test_find_event_any_case(events):
    assert find_event(events, FREEZE_ID.lower())['event_type'] == 'Freeze'
    assert find_event(events, '{%s}' % TERMINATE_ID.upper())['event_type'] == 'Terminate'
    assert find_event(events, 'b7061bac-afdc-4513-b24b-aa5f13a16123') is None
    assert find_event([], FREEZE_ID) is None


@pytest.mark.parametrize('status, pending', [
    ('Scheduled', True), ('Started', True), ('scheduled', True), ('STARTED', True), ('Postponed', False),
    (None, False),
])
def test_is_pending(status, pending):
    assert is_pending({'event_status': status}) is pending


def test_maintenance_pending_follows_the_westno_lifecycle(westno):
    assert [maintenance_pending(events, 'WestNO_0') for events in westno] == [False, True, True, False]
    assert [maintenance_pending(events, 'westno_1') for events in westno] == [False, True, True, False]
    # Another VM of the availability set receives the event but is not affected.
    assert [maintenance_pending(events, 'WestNO_2') for events in westno] == [False, False, False, False]


def test_annotate_event_with_a_fixed_now(westno):
    scheduled = westno[1][0]
    annotated = annotate_event(scheduled, 'westno_0', now=FREEZE_NOT_BEFORE_EPOCH - 900)
    assert annotated['affects_this_vm'] is True
    assert annotated['leader'] == 'WestNO_0'
    assert annotated['is_leader'] is True
    assert annotated['seconds_until_not_before'] == 900
    assert 'affects_this_vm' not in scheduled, 'the input must not be modified'
    for key, value in scheduled.items():
        assert annotated[key] == value

    follower = annotate_event(scheduled, 'WestNO_1', now=FREEZE_NOT_BEFORE_EPOCH + 5)
    assert follower['affects_this_vm'] is True
    assert follower['is_leader'] is False
    assert follower['seconds_until_not_before'] == -5
    bystander = annotate_event(scheduled, 'WestNO_7', now=FREEZE_NOT_BEFORE_EPOCH)
    assert (bystander['affects_this_vm'], bystander['is_leader'], bystander['leader']) == (False, False, 'WestNO_0')


def test_annotate_started_event_has_no_countdown(westno):
    annotated = annotate_event(westno[2][0], 'WestNO_0', now=FREEZE_NOT_BEFORE_EPOCH)
    assert annotated['seconds_until_not_before'] is None


def test_annotate_events_keeps_order(events):
    annotated = annotate_events(events, 'WestNO_2', now=FREEZE_NOT_BEFORE_EPOCH)
    assert ids(annotated) == ids(events)
    assert [event['affects_this_vm'] for event in annotated] == [False, True, False, False]


def test_diff_follows_the_westno_lifecycle(westno):
    appeared = diff_events(westno[0], westno[1])
    assert ids(appeared['new']) == [FREEZE_ID] and appeared['changed'] == [] and appeared['removed'] == []

    started = diff_events(westno[1], westno[2])
    assert started['new'] == [] and started['removed'] == []
    assert len(started['changed']) == 1
    assert started['changed'][0]['before']['event_status'] == 'Scheduled'
    assert started['changed'][0]['after']['event_status'] == 'Started'
    assert became_started(started['changed'][0])

    gone = diff_events(westno[2], westno[3])
    assert gone['new'] == [] and gone['changed'] == [] and ids(gone['removed']) == [FREEZE_ID]


def test_diff_of_identical_documents_is_empty(events):
    assert diff_events(events, copy.deepcopy(events)) == {'new': [], 'changed': [], 'removed': []}


def test_diff_from_nothing_and_to_nothing(events):
    assert ids(diff_events(None, events)['new']) == ids(events)
    assert ids(diff_events(events, None)['removed']) == ids(events)
    assert diff_events(None, None) == {'new': [], 'changed': [], 'removed': []}


def test_diff_matches_ids_without_case(events):
    renamed = copy.deepcopy(events)
    for event in renamed:
        event['event_id'] = '{%s}' % event['event_id'].swapcase()
    assert diff_events(events, renamed) == {'new': [], 'changed': [], 'removed': []}


@pytest.mark.parametrize('field, value', [
    ('not_before_raw', 'Mon, 11 Apr 2022 22:41:58 GMT'), ('resources', ['WestNO_0']), ('event_type', 'Reboot'),
    ('description', 'new text'), ('duration_in_seconds', 30), ('event_source', 'User'),
])
def test_diff_sees_a_change_of_any_compared_field(events, field, value):
    after = copy.deepcopy(events)
    after[0][field] = value
    diff = diff_events(events, after)
    assert [change['after']['event_id'] for change in diff['changed']] == [FREEZE_ID]
    assert not became_started(diff['changed'][0])


def test_diff_mixed_new_changed_removed_in_document_order(events):
    before = [events[0], events[1], events[2]]
    moved = dict(events[2], event_status='Started', not_before_raw='', not_before=None)
    after = [events[3], moved, events[0]]
    diff = diff_events(before, after)
    assert ids(diff['new']) == [TERMINATE_ID]
    assert [change['after']['event_id'] for change in diff['changed']] == [PREEMPT_ID]
    assert became_started(diff['changed'][0])
    assert ids(diff['removed']) == [REBOOT_ID]


def test_events_without_id_are_new_every_time():
    anonymous = {'event_id': None, 'event_type': 'Reboot', 'event_status': 'Scheduled'}
    diff = diff_events([anonymous], [anonymous])
    assert diff['new'] == [anonymous]
    assert diff['removed'] == []


def test_became_started_ignores_case_and_other_moves():
    assert became_started({'before': {'event_status': 'Scheduled'}, 'after': {'event_status': 'started'}})
    assert not became_started({'before': {'event_status': 'Started'}, 'after': {'event_status': 'Started'}})
    assert not became_started({'before': {'event_status': 'Scheduled'}, 'after': {'event_status': 'Scheduled'}})
    assert became_started({'before': {'event_status': None}, 'after': {'event_status': 'Started'}})
