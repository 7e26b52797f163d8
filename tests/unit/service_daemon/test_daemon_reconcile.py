# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The daemon's handling loop (se_service/reconcile.py) when what is known of this VM's name changes."""

import pytest

from se_service.core._se_document import parse_document
from se_service.policy import DECISION_APPROVE, DECISION_WAIT, validate_policy
from se_service.reconcile import (
    PHASE_PREPARE,
    PHASE_RECOVER,
    PHASE_STARTED,
    approvals_due,
    next_job,
    reconcile,
)
from se_service.state import empty_state

EVENT_ID = 'C7061BAC-AFDC-4513-B24B-AA5F13A16123'
KEY = EVENT_ID.lower()
AFTER_PREPARE = validate_policy({'rules': [{'action': 'approve_after_prepare'}]})


def document(incarnation, *events):
    return parse_document({'DocumentIncarnation': incarnation, 'Events': [
        {'EventId': event_id, 'EventStatus': status, 'EventType': 'Reboot', 'ResourceType': 'VirtualMachine',
         'Resources': resources, 'NotBefore': 'Mon, 11 Apr 2022 22:26:58 GMT' if status == 'Scheduled' else '',
         'Description': '', 'EventSource': 'Platform', 'DurationInSeconds': -1}
        for event_id, status, resources in events]})


def scheduled(resources=('myScaleSet_3',)):
    return (EVENT_ID, 'Scheduled', list(resources))


def started(resources=('myScaleSet_3',)):
    return (EVENT_ID, 'Started', list(resources))


def run_phase(state, phase, succeeded=True):
    """What the hook runner records once a phase's hooks have run."""
    record = state['events'][KEY]
    record['phases'][phase] = {'hooks': ['10-hook'], 'results': {'10-hook': {'outcome': 'succeeded'}},
                               'finished': True, 'succeeded': succeeded}
    record['due'].remove(phase)


def kinds(notes):
    return [kind for kind, _event, _detail in notes]


def test_a_name_corrected_by_a_reload_approves_only_after_the_prepare_hooks():
    # Set to the host name, resource_name made this VM's own Reboot look like another VM's.
    state = empty_state()
    reconcile(state, document(1, scheduled()), 'vm-host-3', hooks_for_other_vms=False)
    assert state['events'][KEY]['hooks_enabled'] is False
    # The reload gives the right name; before the next poll judges the event again, nothing is approved.
    keys, decisions = approvals_due(state, AFTER_PREPARE, 'myScaleSet_3')
    assert keys == [] and decisions[KEY][0] == DECISION_WAIT
    reconcile(state, document(1, scheduled()), 'myScaleSet_3', hooks_for_other_vms=False)
    assert state['events'][KEY]['due'] == [PHASE_PREPARE]
    assert approvals_due(state, AFTER_PREPARE, 'myScaleSet_3')[0] == []
    run_phase(state, PHASE_PREPARE)
    keys, decisions = approvals_due(state, AFTER_PREPARE, 'myScaleSet_3')
    assert keys == [KEY] and decisions[KEY][0] == DECISION_APPROVE


def test_an_event_of_another_vm_loses_the_hooks_it_got_while_the_name_was_unknown():
    state = empty_state()
    reconcile(state, document(1, scheduled(['myScaleSet_7'])), None, hooks_for_other_vms=False)
    assert state['events'][KEY]['due'] == [PHASE_PREPARE]
    notes = reconcile(state, document(1, scheduled(['myScaleSet_7'])), 'myScaleSet_3', hooks_for_other_vms=False)
    assert kinds(notes) == ['hooks_dropped'] and notes[0][2] == {'recover_runs': False}
    assert state['events'][KEY]['due'] == [] and state['events'][KEY]['hooks_enabled'] is False
    reconcile(state, document(2, started(['myScaleSet_7'])), 'myScaleSet_3', hooks_for_other_vms=False)
    reconcile(state, document(3), 'myScaleSet_3', hooks_for_other_vms=False)
    assert state['events'][KEY]['due'] == []


def test_an_event_of_another_vm_whose_prepare_ran_gets_its_recover_and_nothing_else():
    state = empty_state()
    reconcile(state, document(1, scheduled(['myScaleSet_7'])), None, hooks_for_other_vms=False)
    run_phase(state, PHASE_PREPARE)
    notes = reconcile(state, document(1, scheduled(['myScaleSet_7'])), 'myScaleSet_3', hooks_for_other_vms=False)
    assert kinds(notes) == ['hooks_dropped'] and notes[0][2] == {'recover_runs': True}
    reconcile(state, document(2, started(['myScaleSet_7'])), 'myScaleSet_3', hooks_for_other_vms=False)
    assert state['events'][KEY]['due'] == []
    reconcile(state, document(3), 'myScaleSet_3', hooks_for_other_vms=False)
    assert state['events'][KEY]['due'] == [PHASE_RECOVER]


@pytest.mark.parametrize('hooks_for_other_vms, name, due', [
    (True, 'myScaleSet_3', [PHASE_PREPARE]),     # asked for: another VM's event keeps its hooks
    (False, 'myScaleSet_7', [PHASE_PREPARE]),    # this VM's event keeps its hooks
])
def test_hooks_stay_where_they_apply(hooks_for_other_vms, name, due):
    state = empty_state()
    reconcile(state, document(1, scheduled(['myScaleSet_7'])), None, hooks_for_other_vms=hooks_for_other_vms)
    notes = reconcile(state, document(1, scheduled(['myScaleSet_7'])), name, hooks_for_other_vms=hooks_for_other_vms)
    assert 'hooks_dropped' not in kinds(notes)
    assert state['events'][KEY]['due'] == due


def test_started_hooks_that_never_began_are_skipped_and_said_so_when_the_event_leaves():
    state = empty_state()
    reconcile(state, document(1, started()), 'myScaleSet_3', hooks_for_other_vms=False)
    assert state['events'][KEY]['due'] == [PHASE_STARTED]
    notes = reconcile(state, document(2), 'myScaleSet_3', hooks_for_other_vms=False)
    assert kinds(notes) == ['started_skipped', 'removed']
    assert state['events'][KEY]['due'] == [PHASE_RECOVER]


def test_before_the_first_poll_only_recover_phases_are_handed_out():
    state = empty_state()
    other = 'D4000000-0000-4000-8000-000000000001'
    reconcile(state, document(1, (other, 'Scheduled', ['myScaleSet_3'])), 'myScaleSet_3', hooks_for_other_vms=False)
    reconcile(state, document(2, (other, 'Scheduled', ['myScaleSet_3']), scheduled()), 'myScaleSet_3',
              hooks_for_other_vms=False)
    run_phase(state, PHASE_PREPARE)
    reconcile(state, document(3, (other, 'Scheduled', ['myScaleSet_3'])), 'myScaleSet_3', hooks_for_other_vms=False)
    # The event seen first still waits for its prepare (saved before a restart); the other is gone: recover due.
    assert next_job(state) == (other.lower(), PHASE_PREPARE)
    assert next_job(state, recover_only=True) == (KEY, PHASE_RECOVER)
