"""Built-in and custom scenarios."""

import pytest

from conftest import world_config
from imds_simulator.control_client import ControlError

# The id the scenario gives its second event (Azure's EventIds are GUIDs).
SECOND_ID = '0B5E7C2D-3A41-4F6E-8D9C-2E1F0A3B4C5D'

WESTNO_EVENT = {
    'EventId': 'C7061BAC-AFDC-4513-B24B-AA5F13A16123',
    'EventStatus': 'Scheduled',
    'EventType': 'Freeze',
    'ResourceType': 'VirtualMachine',
    'Resources': ['WestNO_0', 'WestNO_1'],
    'NotBefore': 'Mon, 11 Apr 2022 22:26:58 GMT',
    'Description': 'Virtual machine is being paused because of a memory-preserving Live Migration operation.',
    'EventSource': 'Platform',
    'DurationInSeconds': 5,
}


def westno_config():
    return {'vms': [
        {'name': 'WestNO_0', 'listen': '127.0.0.1:0', 'group': 'avset'},
        {'name': 'WestNO_1', 'listen': '127.0.0.1:0', 'group': 'avset'},
    ], 'throttle': {'enabled': False}}


def test_westno_yields_exactly_incarnations_1_to_4(make_sim):
    sim = make_sim(westno_config())
    sim.control.start_scenario('westno')
    assert sim.control.clock()['now'].startswith('2022-04-11T22:10:0')
    seen = [sim.document('WestNO_0')]
    sim.control.advance_clock(5)
    seen.append(sim.document('WestNO_0'))
    sim.control.advance_clock(60)
    seen.append(sim.document('WestNO_1'))
    # NotBefore 22:26:58 passes: Started with an empty NotBefore.
    sim.control.set_clock('2022-04-11T22:26:58Z')
    seen.append(sim.document('WestNO_0'))
    sim.control.advance_clock(600)
    seen.append(sim.document('WestNO_1'))
    assert seen[0] == {'DocumentIncarnation': 1, 'Events': []}
    assert seen[1] == {'DocumentIncarnation': 2, 'Events': [WESTNO_EVENT]}
    assert seen[2] == seen[1]
    assert seen[3] == {'DocumentIncarnation': 3, 'Events': [dict(WESTNO_EVENT, EventStatus='Started', NotBefore='')]}
    assert seen[4] == {'DocumentIncarnation': 4, 'Events': []}
    assert sim.control.scenario()['finished'] is True


def test_westno_in_the_default_world_by_approval(make_sim):
    sim = make_sim(westno_config())
    sim.control.start_scenario('westno')
    sim.control.advance_clock(5)
    assert sim.document('WestNO_1')['DocumentIncarnation'] == 2
    assert sim.approve('WestNO_1', 'c7061bac-afdc-4513-b24b-aa5f13a16123').status == 200
    assert sim.document('WestNO_0')['Events'][0]['EventStatus'] == 'Started'


def test_westno_needs_its_vms(sim):
    with pytest.raises(ControlError) as caught:
        sim.control.start_scenario('westno')
    assert caught.value.status == 400 and 'WestNO_0' in caught.value.message


def test_update_domains_one_after_another(make_sim):
    config = world_config(vm_count=4)
    for index, vm in enumerate(config['vms']):
        vm['platformUpdateDomain'] = str(index // 2)
    sim = make_sim(config)
    sim.control.start_scenario('update_domains', params={'linger_seconds': 60})
    assert sim.document('vm0')['Events'] == []
    sim.control.advance_clock(5)
    first = sim.document('vm3')['Events']
    assert [event['Resources'] for event in first] == [['vm0', 'vm1']]
    # Nothing for the next domain while the first is still in the document.
    sim.approve('vm0', first[0]['EventId'])
    sim.control.advance_clock(59)
    assert [event['Resources'] for event in sim.document('vm3')['Events']] == [['vm0', 'vm1']]
    sim.control.advance_clock(1.5)
    assert sim.document('vm3')['Events'] == []
    sim.control.advance_clock(1)
    second = sim.document('vm3')['Events']
    assert [(event['Resources'], event['EventStatus']) for event in second] == [(['vm2', 'vm3'], 'Scheduled')]
    progress = sim.control.scenario()
    assert [step['label'] for step in progress['steps']] == ['ud0', 'ud1']
    assert [step['done'] for step in progress['steps']] == [True, True]
    assert progress['steps'][1]['after_removed'] == 'ud0'


@pytest.mark.parametrize('name,event_type,source,status', [
    ('user_reboot', 'Reboot', 'User', 'Scheduled'),
    ('spot_preemption', 'Preempt', 'Platform', 'Scheduled'),
    ('hardware_failure', 'Reboot', 'Platform', 'Started'),
    ('degraded_hardware', 'Redeploy', 'Platform', 'Scheduled'),
    ('terminate', 'Terminate', 'User', 'Scheduled'),
    ('redeploy', 'Redeploy', 'Platform', 'Scheduled'),
])
def test_single_event_builtins(sim, name, event_type, source, status):
    sim.control.start_scenario(name, params={'vm': 'vm1'})
    assert sim.document('vm0')['Events'] == []
    sim.control.advance_clock(5)
    events = sim.document('vm0')['Events']
    assert [(e['EventType'], e['EventSource'], e['EventStatus'], e['Resources']) for e in events] == [
        (event_type, source, status, ['vm1'])]


def test_custom_steps_with_labels_and_after_removed(sim):
    sim.control.start_scenario(steps=[
        {'at_seconds': 10, 'action': 'create_event', 'label': 'first', 'event_type': 'Freeze',
         'resources': ['vm0'], 'not_before_seconds': 5, 'linger_seconds': 5},
        {'after_removed': 'first', 'delay_seconds': 3, 'action': 'create_event', 'label': 'second',
         'event_type': 'Reboot', 'resources': ['vm1'], 'event_id': SECOND_ID},
        {'at_seconds': 12, 'action': 'start_event', 'event': 'first'},
        {'after_removed': SECOND_ID, 'action': 'advance_clock', 'seconds': 1},
        {'at_seconds': 40, 'action': 'cancel_event', 'event': 'second'},
    ])
    sim.control.advance_clock(10)
    assert [event['EventStatus'] for event in sim.document('vm0')['Events']] == ['Scheduled']
    sim.control.advance_clock(2)
    assert [event['EventStatus'] for event in sim.document('vm0')['Events']] == ['Started']
    sim.control.advance_clock(5)
    assert sim.document('vm0')['Events'] == []
    sim.control.advance_clock(3)
    assert [event['EventId'] for event in sim.document('vm0')['Events']] == [SECOND_ID]
    sim.control.advance_clock(20)
    assert sim.document('vm0')['Events'] == []
    steps = sim.control.scenario()['steps']
    assert all(step['done'] and step['error'] is None for step in steps)
    assert sim.control.event(SECOND_ID)['status'] == 'Cancelled'


def test_failed_step_is_reported_not_fatal(sim):
    sim.control.start_scenario(steps=[{'at_seconds': 0, 'action': 'cancel_event', 'event': 'ghost'}])
    step = sim.control.scenario()['steps'][0]
    assert step['done'] and 'ghost' in step['error']


@pytest.mark.parametrize('body,word', [
    ({'name': 'nope'}, 'unknown scenario'), ({}, 'exactly one'),
    ({'steps': []}, 'steps'), ({'steps': [{'action': 'fly'}]}, 'action'),
    ({'steps': [{'action': 'advance_clock'}]}, 'seconds'),
    ({'steps': [{'action': 'create_event', 'event_type': 'Freeze', 'resources': ['ghost']}]}, 'ghost'),
    ({'steps': [{'action': 'set_speed', 'speed': 2, 'at_seconds': -1}]}, 'at_seconds'),
])
def test_bad_scenarios_are_400(sim, body, word):
    with pytest.raises(ControlError) as caught:
        sim.control.call('POST', '/scenario', body)
    assert caught.value.status == 400 and word in caught.value.message


def test_scenario_from_config_starts_at_reset(make_sim):
    config = world_config(scenario={'name': 'spot_preemption', 'params': {'at_seconds': 0}})
    sim = make_sim(config)
    assert sim.document('vm0')['Events'][0]['EventType'] == 'Preempt'
    sim.control.reset()
    assert sim.control.state()['events'][0]['type'] == 'Preempt'
