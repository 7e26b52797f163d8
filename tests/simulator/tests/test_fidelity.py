"""Where the simulator follows the documented facts more closely than it once did.

Each test pins one point of the fault-matrix's premises: what counts toward
the throttle, which requests enable Scheduled Events, how an unknown EventId
in an approval is answered, and which unrealistic events are warned about.
"""

from conftest import StoppedRealTime, world_config

from imds_simulator.world import DISABLE_AFTER_SECONDS


def test_refused_requests_do_not_count_toward_the_window(make_sim):
    real_time = StoppedRealTime()
    sim = make_sim(world_config(vm_count=1, throttle=True), monotonic=real_time)
    answered = []
    # Six requests a second, for five seconds: five of every six are answered,
    # the sixth refused, and the refusals never snowball.
    for dummy in range(30):
        answered.append(not sim.world.throttled('vm0'))
        real_time.advance(1.0 / 6)
    assert answered.count(True) >= 25
    assert answered[-6:].count(True) >= 5


def test_exactly_five_a_second_is_never_refused(make_sim):
    real_time = StoppedRealTime()
    sim = make_sim(world_config(vm_count=1, throttle=True), monotonic=real_time)
    refused = 0
    for dummy in range(15):
        refused += sim.world.throttled('vm0')
        real_time.advance(0.2)
    assert refused == 0


def test_throttle_is_still_enforced(make_sim):
    sim = make_sim(world_config(), monotonic=StoppedRealTime())
    sim.control.set_throttle(enabled=True, per_second=5)
    statuses = [sim.get('vm0').status for dummy in range(12)]
    assert statuses == [200] * 5 + [429] * 7


def test_instance_requests_neither_wait_for_enabling_nor_keep_scheduled_events_enabled(make_sim):
    sim = make_sim(world_config(vm_count=1, first_call_delay_seconds=30))
    # The first-call delay is for Scheduled Events only: held 30 s, this
    # request would meet the client's 10 s timeout.
    compute = sim.get('vm0', path='/metadata/instance/compute', api_version='2021-02-01')
    assert compute.status == 200
    sim.world.set_first_call_delay(0)
    first = sim.document('vm0')
    sim.control.create_event('Freeze', ['vm0'])
    assert sim.document('vm0')['DocumentIncarnation'] == first['DocumentIncarnation'] + 1
    # A day of instance-metadata traffic only: Scheduled Events is disabled all the same.
    for dummy in range(3):
        sim.world.advance_clock(DISABLE_AFTER_SECONDS / 2)
        assert sim.get('vm0', path='/metadata/instance/compute', api_version='2021-02-01').status == 200
    assert sim.document('vm0')['DocumentIncarnation'] == 1
    vm = [entry for entry in sim.control.state()['vms'] if entry['name'] == 'vm0'][0]
    assert vm['request_count'] == 7


def test_unknown_event_ids_are_refused_by_default(sim):
    event_id = sim.control.create_event('Freeze', ['vm0'])
    refused = sim.approve('vm0', event_id, 'F020BA2E-3BC0-4C40-A10B-86575A9EABD5')
    assert refused.status == 400 and 'not in the scheduled events' in refused.json['error']
    assert sim.control.event(event_id)['approvals'] == []


def test_unknown_event_ids_can_be_accepted_like_microsofts_mock(make_sim):
    sim = make_sim(world_config(unknown_event_ids='accept'))
    event_id = sim.control.create_event('Freeze', ['vm0'])
    accepted = sim.approve('vm0', event_id, 'F020BA2E-3BC0-4C40-A10B-86575A9EABD5')
    assert accepted.status == 200
    assert [approval['vm'] for approval in sim.control.event(event_id)['approvals']] == ['vm0']
    assert sim.approve('vm0', 'F020BA2E-3BC0-4C40-A10B-86575A9EABD5').status == 200


def test_unknown_event_ids_setting_is_checked(make_sim):
    from imds_simulator.config import ConfigError, validate_config
    try:
        validate_config(world_config(unknown_event_ids='maybe'))
    except ConfigError as exc:
        assert 'reject, accept' in str(exc)
    else:
        raise AssertionError('an unknown unknown_event_ids value was accepted')


def test_unrealistic_events_are_warned_about_not_refused(sim):
    # world_config puts vm0 and vm1 in update domains 0 and 1.
    spanning = sim.control.event(sim.control.create_event('Reboot', ['vm0', 'vm1']))
    assert any('update domains 0, 1' in warning for warning in spanning['warnings'])
    short = sim.control.event(sim.control.create_event('Freeze', ['vm0'], not_before_seconds=20))
    assert any('shorter than the documented minimum of 900 s' in warning for warning in short['warnings'])
    realistic = sim.control.event(sim.control.create_event('Preempt', ['vm0']))
    assert realistic['warnings'] == []
    hardware = sim.control.event(sim.control.create_event('Reboot', ['vm1'], hardware_failure=True))
    assert hardware['warnings'] == []


def test_a_status_fault_can_carry_retry_after(sim):
    sim.control.add_fault('status', vm='vm0', path='scheduledevents', status=429, retry_after=3)
    throttled = sim.get('vm0')
    assert throttled.status == 429 and throttled.headers['Retry-After'] == '3'
    assert sim.get('vm0').status == 200
