"""Impact commands: start and end phases, placeholders, no shell, recorded runs."""

import sys
import time

import pytest

from conftest import world_config

RECORDER = r'''
import sys
with open(sys.argv[1], "a") as out:
    out.write(" ".join(sys.argv[2:]) + "\n")
sys.exit(3 if sys.argv[2] == "end" else 0)
'''


@pytest.fixture
def recorder(tmp_path):
    script = tmp_path / 'record.py'
    script.write_text(RECORDER)
    output = tmp_path / 'impacts.txt'
    command = [sys.executable, str(script), str(output), '{phase}', '{vm}', '{event_id}', '{event_type}',
               '{duration}', '$HOME;{phase}']
    return command, output


def wait_for_lines(path, count, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            lines = path.read_text().splitlines()
            if len(lines) >= count:
                return lines
        time.sleep(0.02)
    raise AssertionError('expected %d lines in %s' % (count, path))


def test_config_impact_command_runs_start_then_end_per_vm(make_sim, recorder):
    command, output = recorder
    sim = make_sim(world_config(impact_command=command))
    event_id = sim.control.create_event('Freeze', ['vm0', 'vm1'], duration_seconds=5)
    sim.approve('vm0', event_id)
    lines = wait_for_lines(output, 2)
    assert sorted(lines) == sorted('start %s %s Freeze 5 $HOME;start' % (vm, event_id) for vm in ('vm0', 'vm1'))
    sim.control.advance_clock(4)
    time.sleep(0.2)
    assert len(output.read_text().splitlines()) == 2
    sim.control.advance_clock(2)
    lines = wait_for_lines(output, 4)
    assert sorted(lines[2:]) == sorted('end %s %s Freeze 5 $HOME;end' % (vm, event_id) for vm in ('vm0', 'vm1'))

    def all_finished(control):
        records = control.impacts()
        return records if all(record['exit_code'] is not None for record in records) else None

    records = sim.control.wait_for(all_finished)
    assert [(r['phase'], r['exit_code']) for r in records] == [('start', 0), ('start', 0), ('end', 3), ('end', 3)]
    assert records[0]['argv'][0] == sys.executable


GATED_RECORDER = r'''
import os, sys, time
output, gate, phase, vm = sys.argv[1:5]
if phase == "start" and vm == "vm0":
    # Held until the test opens the gate, like a slow pause of a VM.
    deadline = time.monotonic() + 30
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.02)
with open(output, "a") as out:
    out.write(phase + " " + vm + "\n")
'''


def impact_done_on(sim, vm):
    """Create a 5 s Freeze on ``vm``, approve it and move the clock past its end; return its id."""
    event_id = sim.control.create_event('Freeze', [vm], duration_seconds=5)
    sim.approve(vm, event_id)
    sim.control.advance_clock(6)
    return event_id


@pytest.fixture
def gated(make_sim, tmp_path):
    """A simulator whose impact commands write "phase vm" lines; vm0's start is held until ``gate`` exists.

    Returns ``(sim, output, gate)``, with vm0's end waiting behind its held start.
    """
    script = tmp_path / 'gated.py'
    script.write_text(GATED_RECORDER)
    output, gate = tmp_path / 'impacts.txt', tmp_path / 'gate'
    sim = make_sim(world_config(impact_command=[sys.executable, str(script), str(output), str(gate), '{phase}',
                                                '{vm}']))
    impact_done_on(sim, 'vm0')
    return sim, output, gate


def test_a_vms_end_command_waits_for_its_start_command_and_other_vms_do_not_wait(gated):
    # Each command is its own process: started at once, a quick end could
    # overtake a slow start and leave the VM "paused" after its impact ended.
    sim, output, gate = gated
    end = [record for record in sim.control.impacts() if record['phase'] == 'end']
    assert len(end) == 1 and end[0]['pid'] is None and end[0]['error'] is None, end
    # Another VM's commands run meanwhile, in their own order.
    impact_done_on(sim, 'vm1')
    assert wait_for_lines(output, 2) == ['start vm1', 'end vm1']
    gate.write_text('open')
    assert wait_for_lines(output, 4, timeout=30)[2:] == ['start vm0', 'end vm0']

    def all_finished(control):
        records = control.impacts()
        return records if all(record['exit_code'] is not None for record in records) else None

    records = sim.control.wait_for(all_finished)
    assert all(record['pid'] and record['exit_code'] == 0 for record in records), records


def test_a_reset_lets_the_running_command_finish_and_drops_the_old_worlds_waiting_ones(gated):
    # vm0's end waits behind its held start when the world is reset. Were the
    # old end still queued, it would run before the new world's start (a VM's
    # commands keep their order), so the order of the lines tells.
    sim, output, gate = gated
    assert [record['phase'] for record in sim.control.impacts() if record['pid'] is None] == ['end']
    sim.control.reset()
    assert sim.control.impacts() == []
    gate.write_text('open')
    assert wait_for_lines(output, 1, timeout=30) == ['start vm0']
    fresh = impact_done_on(sim, 'vm0')
    assert wait_for_lines(output, 3, timeout=30) == ['start vm0', 'start vm0', 'end vm0']
    assert [(record['phase'], record['event_id']) for record in sim.control.impacts()] == [
        ('start', fresh), ('end', fresh)]


def test_impact_seconds_default_to_7_when_duration_unknown(make_sim, recorder):
    command, output = recorder
    sim = make_sim(world_config(impact_command=command))
    sim.control.create_event('Reboot', ['vm0'], hardware_failure=True)
    wait_for_lines(output, 1)
    sim.control.advance_clock(6.5)
    time.sleep(0.2)
    assert len(output.read_text().splitlines()) == 1
    sim.control.advance_clock(1)
    assert wait_for_lines(output, 2)[1].startswith('end vm0')


def test_per_event_command_and_impact_seconds_override(sim, recorder):
    command, output = recorder
    sim.control.create_event('Redeploy', ['vm1'], impact_command=command, impact_seconds=30, linger_seconds=20,
                             not_before_seconds=0)
    assert wait_for_lines(output, 1)[0].startswith('start vm1')
    # Removal comes first here (linger 20 < impact 30): the end phase runs then.
    sim.control.advance_clock(21)
    assert wait_for_lines(output, 2)[1].startswith('end vm1')


def test_missing_program_is_recorded_not_fatal(make_sim):
    sim = make_sim(world_config(impact_command=['/nonexistent/impact-tool', '{phase}']))
    event_id = sim.control.create_event('Freeze', ['vm0'])
    sim.approve('vm0', event_id)
    record = sim.control.impacts()[0]
    assert record['pid'] is None and 'nonexistent' in record['error']
    assert sim.document('vm0')['Events'][0]['EventStatus'] == 'Started'


def test_slow_command_does_not_block_the_simulator(make_sim, tmp_path):
    # The command outlives the test (the simulator ends it when it stops): an
    # approval that waited for it would run into the client's 10 s timeout.
    sim = make_sim(world_config(impact_command=[sys.executable, '-c', 'import time; time.sleep(600)']))
    event_id = sim.control.create_event('Freeze', ['vm0'])
    assert sim.approve('vm0', event_id).status == 200
    assert sim.document('vm0')['Events'][0]['EventStatus'] == 'Started'
    assert sim.control.impacts()[0]['exit_code'] is None


def test_no_command_no_runs(sim):
    event_id = sim.control.create_event('Freeze', ['vm0'])
    sim.approve('vm0', event_id)
    assert sim.control.impacts() == []


def _reachable(sim, vm):
    try:
        return sim.get(vm).status == 200
    except (ConnectionError, OSError):
        return False


@pytest.mark.parametrize('event_type', ['Reboot', 'Redeploy'])
def test_a_restarting_vm_is_offline_for_its_impact_only(make_sim, event_type):
    sim = make_sim(world_config(offline_during_restart=True))
    event_id = sim.control.create_event(event_type, ['vm0'], impact_seconds=20)
    # Scheduled: nothing has happened to the VM yet.
    assert _reachable(sim, 'vm0')
    assert sim.approve('vm0', event_id).status == 200
    # Started: vm0 restarts, vm1 (same availability set, not in Resources) does not.
    assert not _reachable(sim, 'vm0')
    assert _reachable(sim, 'vm1')
    sim.control.advance_clock(19)
    assert not _reachable(sim, 'vm0')
    sim.control.advance_clock(2)
    assert _reachable(sim, 'vm0')
    # Back up while the Started event still lingers in the document.
    assert [event['EventStatus'] for event in sim.document('vm0')['Events']] == ['Started']
    offline = [entry for entry in sim.control.log() if entry['fault'] == 'offline']
    assert offline and all(entry['vm'] == 'vm0' and entry['status'] == 'reset' for entry in offline)


def test_a_freeze_or_the_default_config_keeps_the_vm_online(make_sim):
    restarting = make_sim(world_config(offline_during_restart=True))
    freeze = restarting.control.create_event('Freeze', ['vm0'], duration_seconds=30)
    restarting.approve('vm0', freeze)
    assert _reachable(restarting, 'vm0')
    default = make_sim(world_config())
    reboot = default.control.create_event('Reboot', ['vm0'])
    default.approve('vm0', reboot)
    assert _reachable(default, 'vm0')
