# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""scheduled_events_fleet_approve against the simulator's ARM facade: every safety rule, and the effect in IMDS."""

import pytest

from fleet_harness import FleetWorld, fleet_config


@pytest.fixture
def world(tmp_path):
    with FleetWorld(tmp_path, fleet_config(4, groups=1)) as started:
        yield started


def event_state(world, event_id):
    return [event for event in world.control.state()['events'] if event['id'] == event_id][0]


def test_check_mode_then_approve_then_idempotent(world):
    event_id = world.control.create_event('Reboot', ['vm0000', 'vm0001'], not_before_seconds=900)
    would = world.run('scheduled_events_fleet_approve', check=True, event_ids=[event_id])
    assert would['changed'] and would['approved'] == [event_id]
    assert event_state(world, event_id)['approvals'] == []

    done = world.run('scheduled_events_fleet_approve', event_ids=[event_id], wait='started', poll_interval=0.5)
    assert not done.get('failed'), done
    assert done['changed'] and done['approved'] == [event_id]
    assert done['last_statuses'] == {event_id: 'Started'}
    state = event_state(world, event_id)
    assert state['status'] == 'Started' and [approval['vm'] for approval in state['approvals']] == ['vm0000']
    # Every VM of the group now sees it Started in IMDS.
    assert world.control.state()['events'][0]['status'] == 'Started'

    again = world.run('scheduled_events_fleet_approve', event_ids=[event_id])
    assert not again['changed']
    assert again['skipped_events'] == [{'event_id': event_id, 'reason': 'already_started'}]


def test_foreign_vms_are_refused(world):
    event_id = world.control.create_event('Reboot', ['vm0000', 'vm0003'], not_before_seconds=900)
    refused = world.run('scheduled_events_fleet_approve', event_ids=[event_id], allowed_vms=['vm0000'])
    assert refused['failed'] and 'vm0003' in refused['msg']
    skipped = world.run('scheduled_events_fleet_approve', event_types=['Reboot'], allowed_vms=['vm0000'])
    assert not skipped['changed']
    assert skipped['skipped_events'][0]['reason'] == 'foreign_vms'
    assert event_state(world, event_id)['approvals'] == []


def test_filters_with_vm_names_and_finished_events(world):
    user = world.control.create_event('Redeploy', ['vm0002'], event_source='User')
    world.control.create_event('Redeploy', ['vm0001'])
    cancelled = world.control.create_event('Reboot', ['vm0002'])
    world.control.cancel_event(cancelled)
    result = world.run('scheduled_events_fleet_approve', event_sources=['User', 'Platform'], vm_names=['vm0002'],
                       wait='completed', poll_interval=0.5, wait_timeout=1)
    # The wait times out (the simulated clock is not moved), but the report says what was done.
    assert result['failed'] and 'Timed out' in result['msg']
    assert result['approved'] == [user]
    assert {'event_id': cancelled, 'reason': 'finished'} in result['skipped_events']


def test_unknown_ids_fail_before_anything_is_sent(world):
    event_id = world.control.create_event('Freeze', ['vm0000'])
    missing = '00000000-1111-2222-3333-444444444444'
    result = world.run('scheduled_events_fleet_approve', event_ids=[event_id, missing])
    assert result['failed'] and missing in result['msg']
    assert event_state(world, event_id)['approvals'] == []
    ignored = world.run('scheduled_events_fleet_approve', event_ids=[event_id, missing], missing='ignore')
    assert ignored['approved'] == [event_id]


def test_role_is_needed_to_acknowledge(world):
    event_id = world.control.create_event('Freeze', ['vm0000'])
    # A reader sees no rows, so the id is not found: nothing is acknowledged either way.
    denied = world.run('scheduled_events_fleet_approve', event_ids=[event_id], bearer_token='reader-token')
    assert denied['failed'] and event_state(world, event_id)['approvals'] == []


def test_events_of_one_resource_are_acknowledged_in_one_list_request(world):
    first = world.control.create_event('Freeze', ['vm0000'], not_before_seconds=900)
    second = world.control.create_event('Reboot', ['vm0000'], not_before_seconds=900)
    alone = world.control.create_event('Freeze', ['vm0001'], not_before_seconds=900)
    result = world.run('scheduled_events_fleet_approve', event_ids=[first, second, alone])
    assert not result.get('failed'), result
    assert sorted(result['approved']) == sorted([first, second, alone])
    # vm0000's two events in one list request, vm0001's one event on its own.
    assert result['list_requests'] == 1
    assert {event['id']: event['status'] for event in world.control.state()['events']} == {
        first: 'Started', second: 'Started', alone: 'Started'}
