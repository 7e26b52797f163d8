# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""scheduled_events_fleet_info against the simulator's ARM facade: the same events as IMDS, paging, throttling."""

import pytest

from fleet_harness import FleetWorld, fleet_config


@pytest.fixture
def world(tmp_path):
    with FleetWorld(tmp_path, fleet_config(6, groups=2, resource_groups=('rg-a', 'rg-b'))) as started:
        yield started


def test_fleet_read_matches_what_imds_serves(world):
    reboot = world.control.create_event('Reboot', ['vm0000', 'vm0002'], not_before_seconds=900)
    freeze = world.control.create_event('Freeze', ['vm0001'])
    result = world.run('scheduled_events_fleet_info', page_size=1)
    assert not result.get('failed'), result
    by_id = {event['event_id']: event for event in result['events']}
    assert set(by_id) == {reboot, freeze}
    assert result['pages'] == result['rows'] == 3
    imds = world.control.state()['events']
    for event in imds:
        fleet = by_id[event['id']]
        assert fleet['resources'] == event['resources']
        assert fleet['event_status'] == event['status'] == 'Scheduled'
        assert fleet['not_before_raw'] == event['not_before_rfc1123']
        assert fleet['leader'] == event['resources'][0]
    assert len(by_id[reboot]['arm_ids']) == 2
    assert by_id[reboot]['resource_group'] == 'rg-a' and by_id[freeze]['resource_group'] == 'rg-b'
    assert result['changed'] is False


def test_scope_filters_and_finished_statuses(world):
    kept = world.control.create_event('Freeze', ['vm0001'], not_before_seconds=10, linger_seconds=5)
    cancelled = world.control.create_event('Reboot', ['vm0003'])
    world.control.cancel_event(cancelled)
    world.control.create_event('Redeploy', ['vm0000'])
    world.control.advance_clock(30)
    result = world.run('scheduled_events_fleet_info', resource_groups=['RG-B'],
                       event_statuses=['Completed', 'Canceled'])
    assert {(event['event_id'], event['event_status']) for event in result['events']} == {
        (kept, 'Completed'), (cancelled, 'Canceled')}
    by_vm = world.run('scheduled_events_fleet_info', vm_names=['VM0000'], check=True)
    assert [event['event_type'] for event in by_vm['events']] == ['Redeploy']
    by_name = world.run('scheduled_events_fleet_info', resource_names=['vm0003'])
    assert [event['event_id'] for event in by_name['events']] == [cancelled]


def test_throttling_is_waited_out_within_the_deadline(tmp_path):
    with FleetWorld(tmp_path, fleet_config(2), {'throttle_next': 2, 'retry_after_seconds': 1}) as world:
        world.control.create_event('Freeze', ['vm0000'])
        result = world.run('scheduled_events_fleet_info')
        assert not result.get('failed'), result
        assert result['throttled_waits'] == 2 and len(result['events']) == 1


def test_throttling_past_the_deadline_fails_with_what_to_do(tmp_path):
    with FleetWorld(tmp_path, fleet_config(2), {'throttle_next': 1, 'retry_after_seconds': 30}) as world:
        result = world.run('scheduled_events_fleet_info', timeout=5)
        assert result.get('failed') and 'timeout' in result['msg'], result


def test_credentials_and_role_errors_say_what_to_do(world):
    refused = world.run('scheduled_events_fleet_info', bearer_token='forged')
    assert refused['failed'] and 'HTTP 401' in refused['msg']
    assert 'forged' not in str(refused.get('invocation', ''))
    # A reader sees nothing: Resource Graph only shows what the caller may read.
    world.control.create_event('Freeze', ['vm0000'])
    assert world.run('scheduled_events_fleet_info', bearer_token='reader-token')['events'] == []
