# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""System tests: an event Azure changes while it waits or is approved, and one that can never fit max_unavailable.

Same harness and invariants as test_overlapping_events.py: each test starts
its own simulator on kernel-chosen ports and checks the simulator's approval
and impact logs and the hosts' step records, never rounds or seconds.
"""

import os
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rolling_harness import RollingWorld, inventory_name  # noqa: E402 pylint: disable=wrong-import-position

pytestmark = pytest.mark.skipif(sys.platform != 'linux', reason='needs the simulator and ansible-playbook locally')

CHANGED = 'E5000000-0000-4000-8000-000000000001'
TOO_BIG = 'E5000000-0000-4000-8000-000000000002'
GROWN = 'E5000000-0000-4000-8000-000000000003'
FILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'files')


def wait_until(predicate, thread, seconds):
    """Wait until ``predicate()`` holds, the playbook's ``thread`` ends, or ``seconds`` pass; return predicate()."""
    deadline = time.monotonic() + seconds
    while not predicate() and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.5)
    return predicate()


def step_names(world, vm):
    return [step for _at, step in world.steps().get(inventory_name(vm), [])]


def test_an_event_azure_changes_while_it_waits_drains_the_hosts_it_gains(tmp_path):
    """A Freeze naming web_0 and a VM outside the inventory (so it waits for NotBefore, unapproved) becomes a
    Reboot that also names web_1, then its NotBefore moves closer: web_1 is drained before the event starts,
    nothing is approved, and both hosts are verified before they return to service."""
    groups = {'web': {'vms': [('web_0', 0), ('web_1', 0), ('web_2', 1), ('web_3', 1)], 'max_unavailable': 2}}
    with RollingWorld(tmp_path, groups, foreign=[('partner_0', 'web')], speed=1) as world:
        world.start_scenario([{'action': 'create_event', 'label': 'changed', 'event_id': CHANGED,
                               'event_type': 'Freeze', 'resources': ['web_0', 'partner_0'], 'at_seconds': 0,
                               'impact_seconds': 2, 'linger_seconds': 30}])
        runs = []
        player = threading.Thread(target=lambda: runs.append(world.run_playbook(timeout=900)))
        player.start()
        try:
            assert wait_until(lambda: step_names(world, 'web_0') == ['drain'], player, 600), world.steps()
            world.control.change_event(CHANGED, event_type='Reboot', resources=['web_0', 'web_1', 'partner_0'])
            assert wait_until(lambda: step_names(world, 'web_1') == ['drain'], player, 600), world.steps()
            # Azure moves NotBefore, and once the run has seen that, moves it
            # again to a few seconds from now: the event starts then, unapproved.
            world.control.change_event(CHANGED, not_before_seconds=1200)
            assert wait_until(lambda: 'Azure changed its NotBefore' in world.output_so_far(), player, 600)
            world.control.change_event(CHANGED, not_before_seconds=5)
        finally:
            player.join(900)
        run = runs[0]
        problems = world.invariant_problems(run)
        assert problems == [], '\n'.join(problems) + '\n' + run.output[-3000:]
        assert run.returncode == 0, run.output[-3000:]
        assert world.approvals() == []
        event = run.event(CHANGED)
        assert event['event_type'] == 'Reboot'
        assert event['hosts'] == [inventory_name('web_0'), inventory_name('web_1')]
        assert event['outcome'] == 'foreign' and event['foreign_resources'] == ['partner_0']
        assert set(change['field'] for change in event['changes']) == {'type', 'Resources', 'NotBefore'}
        assert 'Azure changed its Resources' in run.output
        for vm in ('web_0', 'web_1'):
            assert step_names(world, vm) == ['drain', 'verify', 'undrain'], world.steps()
        assert step_names(world, 'web_2') == [] and step_names(world, 'web_3') == []


def test_a_vm_azure_adds_between_the_read_and_the_approval_is_drained_before_the_event_is_approved(tmp_path):
    """Azure adds web_1 to a Freeze of web_0 while the round drains web_0, after the round read it: the approve
    task, given the VMs the event named when read, refuses it; the next round drains web_1, then approves."""
    groups = {'web': {'vms': [('web_0', 0), ('web_1', 0), ('web_2', 1), ('web_3', 1)], 'max_unavailable': 2,
                      'settings': {'drain_tasks': os.path.join(FILES, 'drain_then_azure_grows_the_event.yml')}}}
    with RollingWorld(tmp_path, groups, speed=1) as world:
        world.start_scenario([{'action': 'create_event', 'label': 'grown', 'event_id': GROWN, 'event_type': 'Freeze',
                               'resources': ['web_0'], 'at_seconds': 0, 'impact_seconds': 2,
                               'linger_seconds': 30}])
        grow = {'host': inventory_name('web_0'), 'resources': ['web_0', 'web_1'],
                'url': '%s/events/%s/change' % (world.control.base_url, GROWN)}
        run = world.run_playbook(timeout=900, system_test_grow=grow)
        problems = world.invariant_problems(run)
        assert problems == [], '\n'.join(problems) + '\n' + run.output[-3000:]
        assert run.returncode == 0, run.output[-3000:]
        approvals = world.approvals()
        assert [event_ids for _at, _vm, event_ids in approvals] == [[GROWN.lower()]], approvals
        assert world.drained_at(inventory_name('web_1'), approvals[0][0])
        event = run.event(GROWN)
        assert event['outcome'] == 'approved'
        assert event['hosts'] == [inventory_name('web_0'), inventory_name('web_1')]
        assert any('outside allowed_vms' in error and 'web_1' in error for error in event['errors']), event
        for vm in ('web_0', 'web_1'):
            assert step_names(world, vm) == ['drain', 'verify', 'undrain'], world.steps()


@pytest.mark.parametrize('choice, returncode, outcome', [
    ('fail', 'non-zero', 'will_start_undrained'),
    ('leave', 0, 'left_undrained'),
])
def test_an_event_that_can_never_fit_is_reported_at_once(tmp_path, choice, returncode, outcome):
    """A Reboot naming both db hosts with max_unavailable 1 can never be drained within the budget: the run
    says so every round, drains nothing, approves nothing, and fails unless the user chose to leave it."""
    groups = {'db': {'vms': [('db_0', 0), ('db_1', 0)], 'max_unavailable': 1}}
    with RollingWorld(tmp_path, groups, speed=1) as world:
        world.start_scenario([{'action': 'create_event', 'label': 'too_big', 'event_id': TOO_BIG,
                               'event_type': 'Reboot', 'resources': ['db_0', 'db_1'], 'at_seconds': 0}])
        world.control.wait_for(lambda control: len(control.events()) == 1, timeout=30)
        run = world.run_playbook(timeout=600, rolling_over_budget=choice, rolling_time_budget_seconds=20)
        assert (run.returncode != 0) if returncode == 'non-zero' else (run.returncode == 0), run.output[-3000:]
        assert world.approvals() == [] and world.steps() == {}
        event = run.event(TOO_BIG)
        assert event['outcome'] == outcome, event
        assert run.report['run']['worst_outcome'] == outcome
        assert run.report['run']['failed'] is (choice == 'fail')
        if choice == 'fail':
            assert 'will start undrained at NotBefore' in run.report['run']['summary']
            assert 'max_unavailable' in run.output
