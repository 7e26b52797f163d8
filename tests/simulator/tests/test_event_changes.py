"""Azure changes an event that is still Scheduled: type, NotBefore, Resources (POST /events/<id>/change)."""

import pytest

from conftest import world_config
from imds_simulator.clock import parse_iso as epoch_of_utc
from imds_simulator.control_client import ControlError


def only_event(document):
    assert len(document['Events']) == 1
    return document['Events'][0]


def test_type_not_before_and_resources_change_in_every_document(make_sim):
    sim = make_sim(world_config(vm_count=3))
    event_id = sim.control.create_event('Reboot', ['vm0'], not_before_seconds=900)
    before = sim.document('vm2')
    changed = sim.control.change_event(event_id, event_type='Freeze', not_before_seconds=120,
                                       resources=['vm0', 'vm1'])
    assert changed['type'] == 'Freeze' and changed['resources'] == ['vm0', 'vm1']
    assert changed['changes'] == [{'event_type': 'Freeze', 'resources': ['vm0', 'vm1'],
                                   'not_before': changed['not_before'], 'description': before['Events'][0]['Description'],
                                   'duration_seconds': -1}]
    now = epoch_of_utc(sim.control.clock()['now'])
    for vm in ('vm0', 'vm1', 'vm2'):
        document = sim.document(vm)
        # One change of the array, one incarnation more.
        assert document['DocumentIncarnation'] == before['DocumentIncarnation'] + 1
        event = only_event(document)
        assert (event['EventId'], event['EventType'], event['Resources'], event['EventStatus']) == (
            event_id, 'Freeze', ['vm0', 'vm1'], 'Scheduled')
    assert 110 <= epoch_of_utc(changed['not_before']) - now <= 121


def test_fields_left_out_keep_their_value(sim):
    event_id = sim.control.create_event('Reboot', ['vm0'], not_before_seconds=900)
    not_before = sim.control.event(event_id)['not_before']
    changed = sim.control.change_event(event_id, resources=['vm0', 'vm1'])
    assert changed['type'] == 'Reboot'
    assert abs(epoch_of_utc(changed['not_before']) - epoch_of_utc(not_before)) <= 1


def test_an_earlier_not_before_starts_it_then(sim):
    event_id = sim.control.create_event('Freeze', ['vm0'], not_before_seconds=900)
    sim.control.change_event(event_id, not_before_seconds=10)
    sim.control.advance_clock(11)
    assert only_event(sim.document('vm1'))['EventStatus'] == 'Started'


@pytest.mark.parametrize('change, status, words', [
    ({'resources': ['nobody']}, 400, 'unknown VM'),
    ({'event_type': 'Nap'}, 400, 'event_type'),
    ({'colour': 'red'}, 400, 'unknown field'),
    ({}, 400, 'JSON object'),
])
def test_bad_changes_name_the_field(sim, change, status, words):
    event_id = sim.control.create_event('Freeze', ['vm0'])
    with pytest.raises(ControlError) as caught:
        sim.control.change_event(event_id, **change)
    assert caught.value.status == status and words in caught.value.message
    assert sim.control.event(event_id)['type'] == 'Freeze'


def test_a_started_event_cannot_change(sim):
    event_id = sim.control.create_event('Freeze', ['vm0'])
    sim.approve('vm0', event_id)
    with pytest.raises(ControlError) as caught:
        sim.control.change_event(event_id, event_type='Reboot')
    assert caught.value.status == 409


def test_a_scenario_can_change_an_event(sim):
    sim.control.start_scenario(steps=[
        {'label': 'ud0', 'action': 'create_event', 'event_type': 'Reboot', 'resources': ['vm0']},
        {'at_seconds': 5, 'action': 'change_event', 'event': 'ud0', 'event_type': 'Freeze'},
    ])
    sim.control.advance_clock(6)
    assert only_event(sim.document('vm1'))['EventType'] == 'Freeze'
