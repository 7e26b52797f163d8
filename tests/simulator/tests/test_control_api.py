"""Control API and its Python client: state, reset, VMs, events, clock, logs, errors."""

import errno
import json
import os
import socket

import pytest

from conftest import call, closed_port, world_config
from imds_simulator.control_client import ControlError, SimulatorControl, imds_get

# An event id of the test's choosing: a GUID, as Azure's are.
OWN_ID = '7D2A0C1E-5B4F-4C3D-9E8A-1F2B3C4D5E6F'


def test_health_and_state(sim):
    assert sim.control.health() == {'ok': True}
    state = sim.control.state()
    assert set(state) >= {'clock', 'vms', 'events', 'throttle', 'first_call_delay_seconds', 'scenario'}
    assert [(vm['name'], vm['group'], vm['incarnation'], vm['enabled'], vm['request_count'])
            for vm in state['vms']] == [('vm0', 'avset', 1, True, 0), ('vm1', 'avset', 1, True, 0)]
    event_id = sim.control.create_event('Reboot', ['vm0'], shared_host=True)
    sim.approve('vm1', event_id)
    event = sim.control.state()['events'][0]
    for key in ('id', 'group', 'type', 'status', 'resources', 'source', 'not_before', 'started_at', 'removes_at',
                'approvals', 'shared_host', 'tenants_approved'):
        assert key in event
    assert event['approvals'][0]['vm'] == 'vm1' and event['tenants_approved'] is False


def test_create_event_with_absolute_not_before_and_explicit_id(sim):
    sim.control.set_clock('2022-04-11T22:10:00Z')
    answer = sim.control.call('POST', '/events', {'event_type': 'freeze', 'resources': ['vm0'],
                                                  'not_before': '2022-04-11T22:26:58Z', 'event_id': OWN_ID})
    assert answer['event_id'] == OWN_ID
    assert sim.document('vm0')['Events'][0]['NotBefore'] == 'Mon, 11 Apr 2022 22:26:58 GMT'
    assert sim.document('vm0')['Events'][0]['EventType'] == 'Freeze'
    with pytest.raises(ControlError) as caught:
        sim.control.create_event('Freeze', ['vm0'], event_id=OWN_ID.lower())
    assert caught.value.status == 409


@pytest.mark.parametrize('event_id', ['MY-EVENT-1', '', 'C7061BAC-AFDC-4513-B24B-AA5F13A1612', ' %s' % OWN_ID, 7])
def test_an_event_id_that_is_not_a_guid_is_refused(sim, event_id):
    with pytest.raises(ControlError) as caught:
        sim.control.create_event('Freeze', ['vm0'], event_id=event_id)
    assert caught.value.status == 400
    assert "event_id must be a GUID, as Azure's EventIds are" in str(caught.value)
    assert sim.control.events() == []


def test_generated_event_ids_are_uppercase_guids(sim):
    event_id = sim.control.create_event('Freeze', ['vm0'])
    assert event_id == event_id.upper() and len(event_id) == 36 and event_id.count('-') == 4


@pytest.mark.parametrize('body,word', [
    ({'resources': ['vm0']}, 'event_type'), ({'event_type': 'Nap', 'resources': ['vm0']}, 'event_type'),
    ({'event_type': 'Freeze'}, 'resources'), ({'event_type': 'Freeze', 'resources': []}, 'resources'),
    ({'event_type': 'Freeze', 'resources': ['ghost']}, 'ghost'),
    ({'event_type': 'Freeze', 'resources': ['vm0'], 'group': 'elsewhere'}, 'group'),
    ({'event_type': 'Freeze', 'resources': ['vm0'], 'event_source': 'Alien'}, 'event_source'),
    ({'event_type': 'Freeze', 'resources': ['vm0'], 'not_before': 'tomorrow'}, 'not_before'),
    ({'event_type': 'Freeze', 'resources': ['vm0'], 'not_before': '2030-01-01T00:00:00Z', 'not_before_seconds': 1},
     'not both'),
    ({'event_type': 'Freeze', 'resources': ['vm0'], 'not_before_seconds': -1}, 'not_before_seconds'),
    ({'event_type': 'Freeze', 'resources': ['vm0'], 'duration_seconds': -2}, 'duration_seconds'),
    ({'event_type': 'Freeze', 'resources': ['vm0'], 'hardware_failure': True}, 'hardware_failure'),
    ({'event_type': 'Freeze', 'resources': ['vm0'], 'impact_command': 'echo hi'}, 'impact_command'),
    ({'event_type': 'Freeze', 'resources': ['vm0'], 'typo': 1}, 'typo'),
])
def test_bad_event_requests_are_400_naming_the_field(sim, body, word):
    with pytest.raises(ControlError) as caught:
        sim.control.call('POST', '/events', body)
    assert caught.value.status == 400
    assert word in caught.value.message


def test_unknown_event_routes(sim):
    for method, path in (('DELETE', '/events/none'), ('POST', '/events/none/start'),
                         ('POST', '/events/none/tenants-approved'), ('GET', '/events/none')):
        with pytest.raises(ControlError) as caught:
            sim.control.call(method, path)
        assert caught.value.status == 404
    with pytest.raises(ControlError) as caught:
        sim.control.call('GET', '/nowhere')
    assert caught.value.status == 404
    with pytest.raises(ControlError) as caught:
        sim.control.call('DELETE', '/state')
    assert caught.value.status == 405


def test_start_and_tenants_approved_conflicts(sim):
    plain = sim.control.create_event('Freeze', ['vm0'])
    with pytest.raises(ControlError) as caught:
        sim.control.tenants_approved(plain)
    assert caught.value.status == 409
    assert sim.control.start_event(plain)['status'] == 'Started'
    with pytest.raises(ControlError) as caught:
        sim.control.start_event(plain)
    assert caught.value.status == 409


def test_invalid_json_body_is_400(sim):
    with socket.create_connection(sim.simulator.control_address, timeout=5) as raw:
        raw.sendall(b'POST /events HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\n{nope')
        answer = b''
        while True:
            chunk = raw.recv(4096)
            if not chunk:
                break
            answer += chunk
    assert answer.startswith(b'HTTP/1.1 400')
    assert b'not valid JSON' in answer


def test_clock_routes(sim):
    before = sim.control.clock()
    after = sim.control.advance_clock(3600)
    assert after['epoch'] - before['epoch'] >= 3600
    assert sim.control.set_clock('2022-04-11T22:10:00Z')['now'].startswith('2022-04-11T22:10:00')
    assert sim.control.set_speed(100)['speed'] == 100
    for body in ({'advance_seconds': -1}, {'speed': 0}, {'set': 'soon'}, {}, {'warp': 1}):
        with pytest.raises(ControlError) as caught:
            sim.control.call('POST', '/clock', body)
        assert caught.value.status == 400


def test_speed_makes_notice_pass_quickly(make_sim):
    sim = make_sim(world_config(speed=2000.0))
    event_id = sim.control.create_event('Freeze', ['vm0'], linger_seconds=100000)
    sim.control.wait_for(lambda control: control.event(event_id)['status'] == 'Started', timeout=5)


def test_reset_clears_events_logs_faults_and_incarnations(sim):
    sim.control.create_event('Freeze', ['vm0'])
    sim.document('vm0')
    sim.control.add_fault('status', status=500, path='compute')
    sim.control.advance_clock(86400 * 3)
    state = sim.control.reset()
    assert state['events'] == [] and all(vm['incarnation'] == 1 for vm in state['vms'])
    assert sim.control.faults() == [] and sim.control.log() == []
    assert abs(sim.world.clock.now() - __import__('time').time()) < 60
    assert sim.document('vm0') == {'DocumentIncarnation': 1, 'Events': []}
    assert sim.control.log()[0]['seq'] == 1


def test_reset_with_config_replaces_the_world_and_listeners(sim):
    old_address = sim.address('vm0')
    kept_address = sim.address('vm1')
    new_config = {'vms': [{'name': 'vm1', 'listen': '%s:%d' % kept_address, 'group': 'g'},
                          {'name': 'fresh', 'listen': '127.0.0.5:0', 'group': 'g'}],
                  'throttle': {'enabled': False}, 'clock_start': '2030-05-01T00:00:00Z'}
    state = sim.control.reset(new_config)
    assert [vm['name'] for vm in state['vms']] == ['vm1', 'fresh']
    assert state['clock']['now'].startswith('2030-05-01T00:00')
    with pytest.raises(OSError):
        call(old_address)
    assert call(sim.address('fresh')).json == {'DocumentIncarnation': 1, 'Events': []}
    assert call(kept_address, path='/metadata/instance/compute', api_version='2021-02-01').json['name'] == 'vm1'


def test_reset_with_bad_config_keeps_the_world(sim):
    with pytest.raises(ControlError) as caught:
        sim.control.reset({'vms': [{'name': 'x', 'listen': '10.0.0.1:80'}]})
    assert caught.value.status == 400 and 'loopback' in caught.value.message
    busy = socket.socket()
    busy.bind(('127.0.0.1', 0))
    busy.listen(1)
    try:
        taken = '127.0.0.1:%d' % busy.getsockname()[1]
        with pytest.raises(ControlError) as caught:
            sim.control.reset({'vms': [{'name': 'x', 'listen': taken}]})
        assert caught.value.status == 409 and taken.split(':')[1] in caught.value.message
    finally:
        busy.close()
    assert [vm['name'] for vm in sim.control.state()['vms']] == ['vm0', 'vm1']
    assert call(sim.address('vm0')).status == 200


def test_add_vm_on_its_own_address(sim):
    added = sim.control.add_vm(name='late', listen='127.0.0.9:0', group='avset', platformUpdateDomain='4')
    assert added['name'] == 'late' and added['incarnation'] == 1
    listen = added['listen']
    assert listen.startswith('127.0.0.9:') and not listen.endswith(':0')
    sim.control.create_event('Freeze', ['late'])
    assert sim.document('vm0')['Events'][0]['Resources'] == ['late']
    assert sim.document('late')['DocumentIncarnation'] == 2
    for bad in ({'name': 'late', 'listen': '127.0.0.9:0'}, {'name': 'other', 'listen': listen},
                {'name': 'x'}, {'name': 'x', 'listen': '127.0.0.1:99999'}):
        with pytest.raises(ControlError) as caught:
            sim.control.call('POST', '/vms', bad)
        assert caught.value.status == 400
    sim.control.reset()
    assert 'late' in [vm['name'] for vm in sim.control.state()['vms']]


def test_request_log_records_every_imds_request(sim):
    event_id = sim.control.create_event('Freeze', ['vm0'])
    sim.get('vm0', headers={'Metadata': 'true', 'User-Agent': 'probe/1'})
    sim.get('vm1', headers={})
    sim.approve('vm0', event_id)
    log = sim.control.log()
    assert [(e['seq'], e['vm'], e['method'], e['status']) for e in log] == [
        (1, 'vm0', 'GET', 200), (2, 'vm1', 'GET', 400), (3, 'vm0', 'POST', 200)]
    assert log[0]['path'] == '/metadata/scheduledevents' and log[0]['query'] == 'api-version=2020-07-01'
    assert log[0]['headers']['User-Agent'] == 'probe/1' and log[0]['headers']['Metadata'] == 'true'
    assert json.loads(log[2]['body']) == {'StartRequests': [{'EventId': event_id}]}
    assert log[0]['sim_time'] and log[0]['real_time']
    assert [e['seq'] for e in sim.control.log(since=2)] == [3]
    assert [e['seq'] for e in sim.control.log(vm='vm1')] == [2]
    approvals = sim.control.approvals()
    assert [(a['vm'], a['event_ids'], a['status']) for a in approvals] == [('vm0', [event_id], 200)]
    with pytest.raises(ControlError):
        sim.control.call('GET', '/log?since=x')


def test_distinct_loopback_addresses_same_port(make_sim):
    # The kernel gives VM a a port on 127.0.0.2; b then asks for that port on
    # 127.0.0.3. Another program can hold that one only by chance: only then
    # (EADDRINUSE) is it tried again with a new port, a bounded number of times.
    for attempt in range(5):
        sim = make_sim({'vms': [{'name': 'a', 'listen': '127.0.0.2:0'}], 'throttle': {'enabled': False}})
        port = sim.address('a')[1]
        try:
            sim.control.add_vm(name='b', listen='127.0.0.3:%d' % port)
            break
        except ControlError as exc:
            if exc.status != 409 or os.strerror(errno.EADDRINUSE) not in exc.message:
                raise
    else:
        pytest.fail('127.0.0.3 had the port of 127.0.0.2 taken in 5 tries (attempt %d)' % attempt)
    assert sim.address('b') == ('127.0.0.3', port)
    assert imds_get('http://127.0.0.2:%d' % port, '/metadata/instance/compute', '2021-02-01')[1]['name'] == 'a'
    assert imds_get('http://127.0.0.3:%d' % port, '/metadata/instance/compute', '2021-02-01')[1]['name'] == 'b'


def test_client_reports_unreachable_simulator():
    with closed_port() as port:
        client = SimulatorControl('http://127.0.0.1:%d' % port, timeout=1)
        with pytest.raises(ControlError) as caught:
            client.health()
        assert caught.value.status is None
        with pytest.raises(ControlError):
            client.wait_until_up(timeout=0.3)


def test_control_address_must_be_loopback():
    from imds_simulator.config import ConfigError
    from imds_simulator.simulator import Simulator
    with pytest.raises(ConfigError) as caught:
        Simulator(world_config(), '0.0.0.0:18079')
    assert 'loopback' in str(caught.value)
