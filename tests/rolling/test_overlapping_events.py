# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""System tests: the rolling maintenance playbook against a simulated fleet with overlapping events.

Each test starts its own simulator on ports the kernel chooses and checks
invariants from the simulator's approval and impact logs and the hosts' step
records (see rolling_harness.invariant_problems), never how many rounds or
seconds something took. The simulated clock runs faster where the notice
would otherwise make a test slow.

Run: .venv/bin/python -m pytest tests/rolling -v
"""

import os
import shlex
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rolling_harness import (  # noqa: E402 pylint: disable=wrong-import-position
    RollingWorld, create_step as create, inventory_name, tasks_skipped)

pytestmark = pytest.mark.skipif(sys.platform != 'linux', reason='needs the simulator and ansible-playbook locally')

FREEZE_WEB_UD0 = 'A1000000-0000-4000-8000-000000000001'
REBOOT_WEB_UD1 = 'A1000000-0000-4000-8000-000000000002'
USER_REDEPLOY_DB0 = 'A1000000-0000-4000-8000-000000000003'
FREEZE_DB1_AND_OUTSIDER = 'A1000000-0000-4000-8000-000000000004'


# The tasks of the steps a round may ask of a host (tasks/rolling_step_*.yml).
STEP_TASKS = ('Run the verify tasks', 'Note the verification', 'Run the drain tasks', 'Note the drain',
              'Approve the events once', 'Note the approval', 'Run the undrain tasks', 'Note the return to service')


def assert_safe(world, run):
    problems = world.invariant_problems(run)
    assert problems == [], '\n'.join(problems) + '\n' + run.output[-3000:]


def test_four_events_at_once_are_all_handled_within_max_unavailable(tmp_path):
    """The issue's scenario: six hosts in two groups, four events created at the same moment with Azure's
    default notice, one naming a VM outside the inventory."""
    groups = {'web': {'vms': [('web_0', 0), ('web_1', 0), ('web_2', 1), ('web_3', 1)], 'max_unavailable': '50%'},
              'db': {'vms': [('db_0', 0), ('db_1', 1)], 'max_unavailable': 1}}
    # The clock runs at real speed, so how fast this machine is does not
    # decide whether an event can be drained in time; once every event this
    # run can approve is approved and the outsider's host drained, the test
    # lets NotBefore pass, as 15 minutes would.
    with RollingWorld(tmp_path, groups, foreign=[('partner_0', 'db')], speed=1) as world:
        world.start_scenario([
            create(FREEZE_WEB_UD0, 'Freeze', ['web_0', 'web_1']),
            create(REBOOT_WEB_UD1, 'Reboot', ['web_2', 'web_3']),
            create(USER_REDEPLOY_DB0, 'Redeploy', ['db_0'], event_source='User'),
            create(FREEZE_DB1_AND_OUTSIDER, 'Freeze', ['db_1', 'partner_0']),
        ])
        # A setting given as a template (here one that notes when it is read)
        # is resolved as the run starts, before the first round reads IMDS,
        # not again in every round.
        readings = tmp_path / 'back_timeout_readings'
        back_timeout = ("{{ lookup('ansible.builtin.pipe', 'date +%%s.%%N >> %s; echo 600') }}"
                        % shlex.quote(str(readings)))
        run = world.run_playbook_passing_notice((FREEZE_WEB_UD0, REBOOT_WEB_UD1, USER_REDEPLOY_DB0),
                                                inventory_name('db_1'), env={'ANSIBLE_DISPLAY_SKIPPED_HOSTS': 'true'},
                                                rolling_back_timeout_seconds=back_timeout)
        assert_safe(world, run)
        assert run.returncode == 0, run.output[-3000:]
        first_imds_read = world.scheduled_events_reads()[0]
        read_at = [float(line) for line in readings.read_text().split()]
        # The simulator notes times to the millisecond.
        late = [moment for moment in read_at if moment >= first_imds_read + 0.001]
        assert read_at and late == [], '%d of %d readings after the first round began' % (len(late), len(read_at))
        # What a round offers a host costs a worker even when skipped: a host
        # gets the tasks of the steps the plan asks of it and no other, an IMDS
        # run none of the fleet plane's acknowledge, and once the run is over
        # the plays of rounds left end before their first worker (here one
        # play had every round: its skipped state taking, and the report's).
        skipped = tasks_skipped(run.output)
        assert [task for task in STEP_TASKS if task in skipped] == [], skipped
        assert 'Acknowledge the events through ARM' not in run.output
        assert skipped.get("Take the run's state from the host that keeps it") == 2, skipped
        # Once a host's IMDS has given its VM name, its reads ask for the events only: the hosts of the Freeze,
        # never down, asked for their identity once in the whole run.
        for vm in ('web_0', 'web_1'):
            paths = [entry['path'] for entry in world.control.log(since=0, vm=vm) if entry['method'] == 'GET']
            identity = [path for path in paths if path.startswith('/metadata/instance')]
            assert len(identity) == 1 and len(paths) - len(identity) > 3, paths
        counts = world.approvals_per_event()
        for event_id in (FREEZE_WEB_UD0, REBOOT_WEB_UD1, USER_REDEPLOY_DB0):
            assert counts.get(event_id.lower()) == 1, counts
            assert run.event(event_id)['outcome'] == 'approved'
        assert FREEZE_DB1_AND_OUTSIDER.lower() not in counts
        foreign = run.event(FREEZE_DB1_AND_OUTSIDER)
        assert foreign['outcome'] == 'foreign' and foreign['foreign_resources'] == ['partner_0']
        assert foreign['hosts'] == [inventory_name('db_1')]
        for event in run.report['events']:
            assert event['status_when_seen'] == 'Scheduled'
            assert event['times']['verified'] and event['times']['undrained']
        assert run.report['run']['summary'].startswith('succeeded: 4 event(s)')
        # Every host that was drained is back in service.
        for host, steps in world.steps().items():
            assert steps[-1][1] == 'undrain', (host, steps)


def test_update_domains_one_after_another_with_a_spot_preemption_in_the_middle(tmp_path):
    groups = {'web': {'vms': [('web_0', 0), ('web_1', 0), ('web_2', 1), ('web_3', 1), ('web_4', 2), ('web_5', 2),
                              ('spot_0', 3)],
                      'max_unavailable': 2}}
    ud_events = ['B2000000-0000-4000-8000-00000000000%d' % index for index in range(3)]
    preemption = 'B2000000-0000-4000-8000-000000000009'
    # The clock runs ten times slower than real time: a 30 s notice leaves this
    # machine 300 s to drain, however busy it is.
    with RollingWorld(tmp_path, groups, speed=0.1) as world:
        fast = {'linger_seconds': 3, 'impact_seconds': 1}
        world.start_scenario([
            create(ud_events[0], 'Reboot', ['web_0', 'web_1'], **fast),
            create(ud_events[1], 'Reboot', ['web_2', 'web_3'], after_removed=ud_events[0], delay_seconds=0.5, **fast),
            create(ud_events[2], 'Reboot', ['web_4', 'web_5'], after_removed=ud_events[1], delay_seconds=0.5, **fast),
            create(preemption, 'Preempt', ['spot_0'], at_seconds=3, **fast),
        ])
        run = world.run_playbook(timeout=1500, rolling_event_types=['Freeze', 'Reboot', 'Redeploy', 'Preempt'],
                                 rolling_settle_seconds=8)
        assert_safe(world, run)
        assert run.returncode == 0, run.output[-3000:]
        counts = world.approvals_per_event()
        assert dict((event_id, counts.get(event_id.lower())) for event_id in ud_events + [preemption]) == \
            dict((event_id, 1) for event_id in ud_events + [preemption])
        spot = run.event(preemption)
        assert spot['outcome'] == 'approved'
        # The VM is deleted: nothing to verify or return to service.
        assert spot['times']['verified'] is None
        assert [step for _at, step in world.steps()[inventory_name('spot_0')]] == ['drain']
        assert all(run.event(event_id)['times']['undrained'] for event_id in ud_events)


def test_an_api_version_without_event_source_or_duration_still_drains_through_the_whole_freeze(tmp_path):
    """IMDS sends EventSource from api-version 2019-08-01 and DurationInSeconds from 2020-07-01. Without them the
    event is still handled, and its host stays drained until the event left: a read that shows it Started may
    come before the pause, and nothing says how long the pause lasts."""
    groups = {'web': {'vms': [('web_0', 0), ('web_1', 1)], 'max_unavailable': 1}}
    freeze = 'D4000000-0000-4000-8000-000000000001'
    with RollingWorld(tmp_path, groups, speed=1) as world:
        world.start_scenario([create(freeze, 'Freeze', ['web_0'], impact_seconds=8, linger_seconds=20)])
        run = world.run_playbook(azure_scheduled_events_api_version='2019-04-01',
                                 rolling_event_sources=['Platform'])
        assert_safe(world, run)
        assert run.returncode == 0, run.output[-3000:]
        event = run.event(freeze)
        assert (event['event_source'], event['duration_in_seconds'], event['outcome']) == (None, None, 'approved')
        assert event['times']['impact_over'] == event['times']['gone'], event['times']
        assert 'Azure gave no EventSource' in run.output
        assert [step for _at, step in world.steps()[inventory_name('web_0')]] == ['drain', 'verify', 'undrain']


def test_a_host_whose_imds_hangs_holds_nothing_up(tmp_path):
    groups = {'web': {'vms': [('web_0', 0), ('web_1', 0), ('web_2', 1), ('web_3', 1)], 'max_unavailable': 2}}
    freeze, reboot = 'C3000000-0000-4000-8000-000000000001', 'C3000000-0000-4000-8000-000000000002'
    with RollingWorld(tmp_path, groups, speed=1, hanging=['web_3'], names_in_inventory=True) as world:
        world.start_scenario([
            # The hung VM is the event's leader (first of Resources).
            create(freeze, 'Freeze', ['web_3', 'web_2'], linger_seconds=20),
            create(reboot, 'Reboot', ['web_0', 'web_1'], linger_seconds=20, after_removed=freeze, delay_seconds=2),
        ])
        runs = []
        player = threading.Thread(target=lambda: runs.append(world.run_playbook(
            timeout=900, rolling_observe_timeout_seconds=6, rolling_settle_seconds=6)))
        player.start()
        # Both events are handled while web_3 hangs; only then does its IMDS
        # come back. A run that has never heard from a host does not end as
        # "nothing pending" (it would fail, naming it, at its time budget).
        deadline = time.monotonic() + 800
        while player.is_alive() and time.monotonic() < deadline:
            steps = world.steps()
            if all([step for _at, step in steps.get(inventory_name(vm), [])][-1:] == ['undrain']
                   for vm in ('web_0', 'web_1', 'web_2')):
                break
            time.sleep(1)
        assert player.is_alive(), 'the run ended before it heard from the hung host'
        world.control.clear_faults()
        player.join(900)
        run = runs[0]
        assert_safe(world, run)
        assert run.returncode == 0, run.output[-3000:]
        rounds = [line.strip() for line in run.output.splitlines() if '"round ' in line]
        assert any('no answer from %s' % inventory_name('web_3') in line for line in rounds), rounds
        assert any('no answer yet from %s' % inventory_name('web_3') in line for line in run.output.splitlines())
        counts = world.approvals_per_event()
        assert counts.get(freeze.lower()) == 1 and counts.get(reboot.lower()) == 1
        # The approval came from a VM that answers, not from the hung leader.
        assert [vm for _at, vm, ids in world.approvals() if freeze.lower() in ids] == ['web_2']
        assert run.event(freeze)['times']['undrained'] and run.event(reboot)['times']['undrained']
        assert run.report['run']['unobserved_hosts'] == []


def test_check_mode_prints_the_plan_and_changes_nothing(tmp_path):
    groups = {'web': {'vms': [('web_0', 0), ('web_1', 1)], 'max_unavailable': 1}}
    with RollingWorld(tmp_path, groups) as world:
        world.start_scenario([create('D4000000-0000-4000-8000-000000000001', 'Freeze', ['web_0'])])
        world.control.wait_for(lambda control: len(control.events()) == 1, timeout=10)
        run = world.run_playbook(extra_args=['--check'], timeout=300, env={'ANSIBLE_DISPLAY_OK_HOSTS': 'true'})
        assert run.returncode == 0, run.output[-3000:]
        assert 'pending -> draining (fits)' in run.output
        assert 'would drain: %s' % inventory_name('web_0') in run.output
        # Check mode drains nothing, so the event never reaches approving: what it would approve next is named.
        assert "would approve once drained: %s for ['D4000000-0000-4000-8000-000000000001']" \
            % inventory_name('web_0') in run.output, run.output[-3000:]
        # Exit status 0, so no "FAILED" (the event is still to be handled after the one round).
        assert 'nothing was drained or approved; planned: 1 event(s): 1 still in progress' in run.output
        assert 'FAILED' not in run.output
        assert world.approvals() == [] and world.steps() == {}
        assert run.report is None


def test_a_misspelled_variable_stops_the_run_before_anything_happens(tmp_path):
    groups = {'web': {'vms': [('web_0', 0)], 'max_unavailable': 1}}
    with RollingWorld(tmp_path, groups) as world:
        run = world.run_playbook(timeout=300, rolling_aprove=False)
        assert run.returncode != 0
        assert 'rolling_aprove (did you mean rolling_approve?)' in run.output
        # No group with hosts, so no play of the run would have any: the check
        # must not be left to them.
        run = world.run_playbook(timeout=300, maintenance_groups='wbe')
        assert run.returncode != 0, run.output[-3000:]
        assert "maintenance_groups: group 'wbe' is not in the inventory; groups there: web" in run.output
        assert world.control.log(since=0) == []


def test_a_source_set_for_one_group_only_stops_the_run_before_anything_happens(tmp_path):
    """The run takes its run-wide variables from the first host, while a few per-host tasks read each host's own:
    a variable that one group's variables set differently from another's is refused, not half applied."""
    groups = {'web': {'vms': [('web_0', 0), ('web_1', 1)], 'max_unavailable': 1, 'host_vars': {'rolling_source': 'imds'}},
              'db': {'vms': [('db_0', 0)], 'max_unavailable': 1, 'host_vars': {'rolling_source': 'resource_graph'}}}
    with RollingWorld(tmp_path, groups) as world:
        world.start_scenario([create('D4000000-0000-4000-8000-000000000002', 'Freeze', ['web_0'])])
        world.control.wait_for(lambda control: len(control.events()) == 1, timeout=10)
        run = world.run_playbook(timeout=300)
        assert run.returncode != 0, run.output[-3000:]
        assert 'Cannot start rolling maintenance' in run.output, run.output[-3000:]
        assert "rolling_source differs between hosts ('imds' on %s, %s; 'resource_graph' on %s)" % (
            inventory_name('web_0'), inventory_name('web_1'), inventory_name('db_0')) in run.output, run.output[-3000:]
        assert world.approvals() == [] and world.steps() == {}
        assert run.report is None
        # Set once for the run (an extra var wins over the groups' variables), the same inventory is accepted.
        run = world.run_playbook(extra_args=['--check'], timeout=300, rolling_source='imds')
        assert run.returncode == 0, run.output[-3000:]
        assert 'would drain: %s' % inventory_name('web_0') in run.output
        assert world.approvals() == [] and world.steps() == {}


def test_approve_user_events_names_what_it_leaves_to_a_leader_outside_the_hosts(tmp_path):
    # A User restart led by a VM outside the inventory is approved by nobody
    # here; someone's restart waits, and the summary must say which.
    from rolling_harness import run_streaming  # pylint: disable=import-outside-toplevel
    mine, elsewhere = 'A7000000-0000-4000-8000-000000000001', 'A7000000-0000-4000-8000-000000000002'
    groups = {'web': {'vms': [('web_0', 0), ('web_1', 1)], 'max_unavailable': 1}}
    with RollingWorld(tmp_path, groups, foreign=[('partner_0', 'web')]) as world:
        world.start_scenario([create(mine, 'Reboot', ['web_0'], event_source='User'),
                              create(elsewhere, 'Reboot', ['partner_0', 'web_1'], event_source='User')])
        world.control.wait_for(lambda control: len(control.events()) == 2, timeout=10)
        command = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', world.write_inventory(),
                   'azure_maintenance.scheduled_events.approve_user_events']
        log_path = str(tmp_path / 'approve_user_events.log')
        env = dict(world.ansible_env(), ANSIBLE_DISPLAY_OK_HOSTS='true')
        assert run_streaming(command, env, world.workdir, log_path, timeout=300) == 0
        with open(log_path, encoding='utf-8') as handle:
            output = handle.read()
        assert '1 User event(s) approved: %s' % mine in output, output[-3000:]
        assert 'their leader VM is none of these hosts' in output and elsewhere in output, output[-3000:]
        assert [ids for _at, _vm, ids in world.approvals()] == [[mine.lower()]]
