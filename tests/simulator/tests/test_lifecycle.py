"""Event lifecycle, approvals and DocumentIncarnation."""

import time

import pytest

from conftest import StoppedRealTime, world_config
from imds_simulator.events import ScheduledEvent


def statuses(document):
    return [(event['EventId'], event['EventStatus'], event['NotBefore']) for event in document['Events']]


def test_incarnation_counts_each_change_exactly_once(sim):
    assert sim.document('vm0')['DocumentIncarnation'] == 1
    for dummy in range(5):
        assert sim.document('vm0')['DocumentIncarnation'] == 1
    sim.control.advance_clock(60)
    assert sim.document('vm0')['DocumentIncarnation'] == 1
    event_id = sim.control.create_event('Reboot', ['vm0'], not_before_seconds=600, linger_seconds=30)
    assert sim.document('vm0')['DocumentIncarnation'] == 2
    assert sim.document('vm0')['DocumentIncarnation'] == 2
    sim.control.advance_clock(10)
    assert sim.document('vm0')['DocumentIncarnation'] == 2
    assert sim.approve('vm0', event_id).status == 200
    started = sim.document('vm0')
    assert started['DocumentIncarnation'] == 3
    assert statuses(started) == [(event_id, 'Started', '')]
    # Approving a Started event changes nothing a VM sees.
    assert sim.approve('vm1', event_id).status == 200
    assert sim.document('vm0')['DocumentIncarnation'] == 3
    sim.control.advance_clock(31)
    assert sim.document('vm0') == {'DocumentIncarnation': 4, 'Events': []}
    for dummy in range(3):
        assert sim.document('vm0')['DocumentIncarnation'] == 4
    # The other VM of the group saw the same changes.
    assert sim.document('vm1')['DocumentIncarnation'] == 4


def test_incarnation_is_per_vm_and_counts_while_nobody_polls(sim):
    first = sim.control.create_event('Freeze', ['vm0'])
    second = sim.control.create_event('Freeze', ['vm1'])
    sim.control.cancel_event(first)
    # Three changes happened without a request in between: one increment each.
    assert sim.document('vm1')['DocumentIncarnation'] == 4
    assert [event['EventId'] for event in sim.document('vm1')['Events']] == [second]
    assert [vm['incarnation'] for vm in sim.control.state()['vms']] == [4, 4]


def test_approval_by_one_vm_starts_the_event_for_the_whole_group(make_sim):
    sim = make_sim(world_config(vm_count=3))
    event_id = sim.control.create_event('Freeze', ['vm0', 'vm1'])
    assert sim.approve('vm2', event_id).status == 200
    for vm in ('vm0', 'vm1', 'vm2'):
        assert statuses(sim.document(vm)) == [(event_id, 'Started', '')]
    event = sim.control.event(event_id)
    assert event['status'] == 'Started'
    assert [approval['vm'] for approval in event['approvals']] == ['vm2']
    assert sim.control.approvals()[-1]['event_ids'] == [event_id]


def test_approving_twice_or_after_start_is_200(sim):
    event_id = sim.control.create_event('Reboot', ['vm0', 'vm1'])
    assert sim.approve('vm0', event_id).status == 200
    assert sim.approve('vm1', event_id).status == 200
    assert sim.approve('vm0', event_id).status == 200
    response = sim.approve('vm0', event_id)
    assert response.status == 200 and response.body == b''
    assert len(sim.control.event(event_id)['approvals']) == 4


def test_event_ids_match_case_insensitively_and_several_per_request(sim):
    first = sim.control.create_event('Freeze', ['vm0'], event_id='AbCd0001-0000-4000-8000-00000000000A')
    second = sim.control.create_event('Freeze', ['vm1'], event_id='EF000002-0000-4000-8000-00000000000B')
    assert sim.approve('vm0', first.lower(), second.lower()).status == 200
    assert [event['EventStatus'] for event in sim.document('vm0')['Events']] == ['Started', 'Started']
    assert sim.control.approvals()[-1]['event_ids'] == ['abcd0001-0000-4000-8000-00000000000a',
                                                        'ef000002-0000-4000-8000-00000000000b']


def test_unknown_event_id_is_400_naming_it_and_approves_nothing(sim):
    known = sim.control.create_event('Freeze', ['vm0'])
    response = sim.approve('vm0', known, 'F020BA2E-0000-4C40-A10B-86575A9EABD5')
    assert response.status == 400
    assert 'F020BA2E-0000-4C40-A10B-86575A9EABD5' in response.json['error']
    assert sim.control.event(known)['status'] == 'Scheduled'
    assert sim.control.approvals()[-1]['status'] == 400


def test_removed_event_can_no_longer_be_approved(sim):
    event_id = sim.control.create_event('Freeze', ['vm0'], linger_seconds=5)
    sim.control.start_event(event_id)
    sim.control.advance_clock(6)
    assert sim.approve('vm0', event_id).status == 400


@pytest.mark.parametrize('body', [
    b'', b'not json', b'[]', b'{}', b'{"StartRequests": {}}', b'{"StartRequests": []}',
    b'{"StartRequests": [{}]}', b'{"StartRequests": [{"EventId": 7}]}', b'{"StartRequests": ["x"]}',
    b'{"StartRequests": [{"EventId": ""}]}', b'\xff\xfe'])
def test_malformed_approval_body_is_400_with_a_message(sim, body):
    sim.control.create_event('Freeze', ['vm0'])
    response = sim.get('vm0', method='POST', body=body)
    assert response.status == 400
    assert response.json['error'].startswith('Bad request.')
    assert 'StartRequests' in response.json['error'] or 'JSON' in response.json['error']


def test_approval_needs_the_metadata_header(sim):
    event_id = sim.control.create_event('Freeze', ['vm0'])
    response = sim.get('vm0', method='POST', headers={}, body={'StartRequests': [{'EventId': event_id}]})
    assert response.status == 400
    assert sim.control.event(event_id)['status'] == 'Scheduled'


def test_not_before_passing_starts_the_event_then_linger_removes_it(sim):
    event_id = sim.control.create_event('Redeploy', ['vm0'], not_before_seconds=100, linger_seconds=50)
    assert statuses(sim.document('vm0'))[0][1] == 'Scheduled'
    sim.control.advance_clock(99)
    assert statuses(sim.document('vm0'))[0][1] == 'Scheduled'
    sim.control.advance_clock(2)
    assert statuses(sim.document('vm0')) == [(event_id, 'Started', '')]
    sim.control.advance_clock(48)
    assert len(sim.document('vm0')['Events']) == 1
    sim.control.advance_clock(2)
    assert sim.document('vm0')['Events'] == []
    event = sim.control.event(event_id)
    assert event['status'] == 'Removed'
    assert event['removes_at'] == event['finished_at']


def test_default_linger_is_600_seconds_after_start(sim):
    event_id = sim.control.create_event('Freeze', ['vm0'])
    sim.control.start_event(event_id)
    sim.control.advance_clock(599)
    assert len(sim.document('vm0')['Events']) == 1
    sim.control.advance_clock(2)
    assert sim.document('vm0')['Events'] == []


def test_clock_jump_far_past_not_before_carries_the_event_through(sim):
    sim.control.create_event('Reboot', ['vm0'], not_before_seconds=60, linger_seconds=60)
    sim.document('vm0')
    sim.control.advance_clock(3600)
    # Started and removed within the jump: the VM sees one change, the removal.
    assert sim.document('vm0') == {'DocumentIncarnation': 3, 'Events': []}


def test_tick_moves_events_without_any_request(make_sim):
    sim = make_sim(world_config(speed=50.0))
    event_id = sim.control.create_event('Preempt', ['vm0'], not_before_seconds=10, linger_seconds=10)
    # 10 simulated seconds are 0.2 real seconds at speed 50.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and sim.world.vms['vm0'].incarnation < 3:
        time.sleep(0.02)
    assert sim.world.events[event_id.lower()].status == 'Started'
    assert sim.world.vms['vm0'].incarnation == 3


@pytest.mark.parametrize('event_type,notice', [('Freeze', 900), ('Reboot', 900), ('Redeploy', 600),
                                               ('Preempt', 30), ('Terminate', 300)])
def test_minimum_notice_defaults(sim, event_type, notice):
    event_id = sim.control.create_event(event_type, ['vm0'])
    event = sim.world.events[event_id.lower()]
    assert event.not_before - event.created_at == pytest.approx(notice)
    sim.control.advance_clock(notice - 1)
    assert sim.control.event(event_id)['status'] == 'Scheduled'
    sim.control.advance_clock(2)
    assert sim.control.event(event_id)['status'] == 'Started'


def test_defaults_of_duration_and_source(sim):
    freeze = sim.control.create_event('Freeze', ['vm0'])
    reboot = sim.control.create_event('Reboot', ['vm0'])
    events = {event['EventId']: event for event in sim.document('vm0')['Events']}
    assert events[freeze]['DurationInSeconds'] == 5
    assert events[reboot]['DurationInSeconds'] == -1
    assert events[reboot]['EventSource'] == 'Platform'
    assert events[reboot]['Description']


def test_cancellation_removes_a_scheduled_event_without_start(sim):
    event_id = sim.control.create_event('Reboot', ['vm0'])
    assert sim.document('vm1')['DocumentIncarnation'] == 2
    cancelled = sim.control.cancel_event(event_id)
    assert cancelled['status'] == 'Cancelled' and cancelled['started_at'] is None
    assert sim.document('vm1') == {'DocumentIncarnation': 3, 'Events': []}
    sim.control.advance_clock(3600)
    assert sim.control.event(event_id)['started_at'] is None


def test_started_event_cannot_be_cancelled(sim):
    from imds_simulator.control_client import ControlError
    event_id = sim.control.create_event('Reboot', ['vm0'])
    sim.approve('vm0', event_id)
    with pytest.raises(ControlError) as caught:
        sim.control.cancel_event(event_id)
    assert caught.value.status == 409


def test_hardware_failure_reboot_appears_started(sim):
    event_id = sim.control.create_event('Reboot', ['vm0'], hardware_failure=True)
    document = sim.document('vm0')
    assert document['DocumentIncarnation'] == 2
    assert statuses(document) == [(event_id, 'Started', '')]
    assert document['Events'][0]['EventType'] == 'Reboot'


def test_degraded_hardware_not_before_days_ahead(sim):
    sim.control.start_scenario('degraded_hardware', params={'vm': 'vm1', 'at_seconds': 0})
    event = sim.control.state()['events'][0]
    created = sim.world.events[event['id'].lower()]
    assert created.not_before - created.created_at == pytest.approx(7 * 86400)
    assert event['type'] == 'Redeploy' and event['resources'] == ['vm1']


def test_shared_host_waits_for_other_tenants_after_our_approval(sim):
    event_id = sim.control.create_event('Reboot', ['vm0'], shared_host=True)
    assert sim.approve('vm0', event_id).status == 200
    assert statuses(sim.document('vm0'))[0][1] == 'Scheduled'
    sim.control.tenants_approved(event_id)
    assert statuses(sim.document('vm0')) == [(event_id, 'Started', '')]


def test_shared_host_other_tenants_alone_do_not_start_it(sim):
    event_id = sim.control.create_event('Reboot', ['vm0'], shared_host=True, not_before_seconds=100)
    sim.control.tenants_approved(event_id)
    assert sim.control.event(event_id)['status'] == 'Scheduled'
    sim.approve('vm1', event_id)
    assert sim.control.event(event_id)['status'] == 'Started'


def test_shared_host_starts_when_not_before_passes(sim):
    event_id = sim.control.create_event('Reboot', ['vm0'], shared_host=True, not_before_seconds=100)
    sim.approve('vm0', event_id)
    sim.control.advance_clock(101)
    assert sim.control.event(event_id)['status'] == 'Started'


def test_own_events_only_vm_sees_only_events_listing_it(make_sim):
    config = world_config(vm_count=3)
    config['vms'][2]['own_events_only'] = True
    sim = make_sim(config)
    other = sim.control.create_event('Freeze', ['vm0'])
    own = sim.control.create_event('Freeze', ['vm2'])
    assert [event['EventId'] for event in sim.document('vm2')['Events']] == [own]
    assert [event['EventId'] for event in sim.document('vm1')['Events']] == [other, own]
    assert sim.approve('vm2', other).status == 400
    # The hidden event changed nothing for vm2: one increment, for its own.
    assert sim.document('vm2')['DocumentIncarnation'] == 2


def test_a_refresh_reads_the_events_of_a_group_once_not_once_per_vm(make_sim, monkeypatch):
    # Every request refreshes the world. Reading each VM's events anew made
    # a refresh over 1,000 VMs and 500 events format 500,000 NotBefore dates.
    config = world_config(vm_count=12)
    config['vms'][10]['group'] = 'other'
    config['vms'][11]['own_events_only'] = True
    sim = make_sim(config)
    shared = sim.control.create_event('Freeze', ['vm0'])
    own = sim.control.create_event('Freeze', ['vm11'])
    read = []
    fingerprint = ScheduledEvent.fingerprint
    monkeypatch.setattr(ScheduledEvent, 'fingerprint', lambda event: read.append(event.event_id) or fingerprint(event))
    sim.world.refresh()
    # Once for the ten VMs of avset that see all of it; once more for vm11's own.
    assert sorted(read) == sorted([shared, own, own])
    monkeypatch.setattr(ScheduledEvent, 'fingerprint', fingerprint)
    # And the documents count changes as before.
    assert sim.document('vm1')['DocumentIncarnation'] == 3
    assert sim.document('vm11')['DocumentIncarnation'] == 2
    assert sim.document('vm10') == {'DocumentIncarnation': 1, 'Events': []}


def test_groups_are_separate(make_sim):
    config = world_config(vm_count=3)
    config['vms'][2]['group'] = 'other'
    sim = make_sim(config)
    sim.control.create_event('Freeze', ['vm0'])
    assert len(sim.document('vm1')['Events']) == 1
    assert sim.document('vm2') == {'DocumentIncarnation': 1, 'Events': []}


def test_24h_without_requests_disables_and_incarnation_starts_over(sim):
    sim.control.create_event('Freeze', ['vm0'])
    sim.control.create_event('Reboot', ['vm0'])
    assert sim.document('vm0')['DocumentIncarnation'] == 3
    sim.control.advance_clock(23 * 3600)
    # Still polled within 24h: nothing disabled. Both events started and
    # were removed within the jump: one change.
    assert sim.document('vm0') == {'DocumentIncarnation': 4, 'Events': []}
    assert sim.control.vm('vm0')['enabled'] is True
    sim.control.advance_clock(24 * 3600 + 1)
    assert sim.control.vm('vm0')['enabled'] is False
    reenabled = sim.document('vm0')
    assert reenabled == {'DocumentIncarnation': 1, 'Events': []}
    assert sim.control.vm('vm0')['enabled'] is True
    sim.control.create_event('Freeze', ['vm0'])
    assert sim.document('vm0')['DocumentIncarnation'] == 2


def test_explicit_disable_restarts_incarnation_with_current_events(sim):
    event_id = sim.control.create_event('Freeze', ['vm0'])
    sim.control.create_event('Freeze', ['vm0'])
    assert sim.document('vm0')['DocumentIncarnation'] == 3
    assert sim.control.disable_vm('vm0')['enabled'] is False
    document = sim.document('vm0')
    assert document['DocumentIncarnation'] == 1
    assert document['Events'][0]['EventId'] == event_id


def test_first_call_delay_holds_the_answer_for_real(make_sim):
    # Lower bounds only: a busy machine makes an answer slower, never faster.
    # What is held, and for how long, is tested on the world's own clock below.
    sim = make_sim(world_config(first_call_delay_seconds=0.6))
    started = time.monotonic()
    assert sim.document('vm0')['DocumentIncarnation'] == 1
    assert time.monotonic() - started >= 0.55
    sim.control.set_first_call_delay(0.3)
    sim.control.disable_vm('vm0')
    started = time.monotonic()
    sim.document('vm0')
    assert time.monotonic() - started >= 0.25
    assert sim.control.call('GET', '/enablement') == {'first_call_delay_seconds': 0.3}


def test_first_call_delay_holds_the_first_request_and_those_during_it_only(make_sim):
    real_time = StoppedRealTime()
    world = make_sim(world_config(vm_count=3, first_call_delay_seconds=30), monotonic=real_time).world
    # Instance metadata neither waits nor enables Scheduled Events.
    assert world.admit('vm2', scheduled_events=False) == 0
    assert world.admit('vm0') == 30
    real_time.advance(10)
    # Arriving while the first waits: held until the same moment.
    assert world.admit('vm0') == 20
    # Each VM's Scheduled Events is enabled by its own first request.
    assert world.admit('vm1') == 30
    real_time.advance(20)
    assert world.admit('vm0') == 0
    assert world.admit('vm2') == 30
    real_time.advance(3600)
    assert world.admit('vm0') == 0
    world.set_first_call_delay(5)
    world.disable_vm('vm0')
    assert world.admit('vm0') == 5
    real_time.advance(5)
    assert world.admit('vm0') == 0
    assert world.admit('vm1') == 0


def test_throttle_answers_429_over_the_per_second_budget(make_sim):
    real_time = StoppedRealTime()
    sim = make_sim(world_config(throttle=True), monotonic=real_time)
    answers = [sim.get('vm0').status for dummy in range(5)]
    answers.append(sim.get('vm0', path='/metadata/instance/compute', api_version='2021-02-01').status)
    assert answers == [200] * 5 + [429]
    throttled = sim.get('vm0')
    assert throttled.json == {'error': 'Too many requests'}
    # Another VM has its own budget.
    assert sim.get('vm1').status == 200
    real_time.advance(0.95)
    assert sim.get('vm0').status == 429
    real_time.advance(0.1)
    assert sim.get('vm0').status == 200
    sim.control.set_throttle(per_second=50)
    assert all(sim.get('vm0').status == 200 for dummy in range(20))
    sim.control.set_throttle(enabled=False)
    assert all(sim.get('vm0').status == 200 for dummy in range(60))
