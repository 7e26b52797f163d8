# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""System tests: the rolling maintenance playbook over the fleet plane (rolling_source: resource_graph).

The overlapping scenario of test_overlapping_events.py, observed through the
simulator's Resource Graph and approved through its ARM acknowledge API,
checked with the same invariants from the simulator's approval and impact
logs and the hosts' step records; plus: no VM's IMDS was asked anything.

Run: .venv/bin/python -m pytest tests/rolling/test_overlapping_events_fleet.py -v
"""

import os
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from fleet_rolling_harness import FleetRollingWorld  # noqa: E402
from rolling_harness import create_step as create, inventory_name  # noqa: E402
from test_overlapping_events import assert_safe  # noqa: E402

pytestmark = pytest.mark.skipif(sys.platform != 'linux', reason='needs the simulator and ansible-playbook locally')

FREEZE_WEB_UD0 = 'E5000000-0000-4000-8000-000000000001'
REBOOT_WEB_UD1 = 'E5000000-0000-4000-8000-000000000002'
USER_REDEPLOY_DB0 = 'E5000000-0000-4000-8000-000000000003'
FREEZE_DB1_AND_OUTSIDER = 'E5000000-0000-4000-8000-000000000004'
GROWN_WEB_0 = 'E5000000-0000-4000-8000-000000000005'
FREEZE_DB0_AND_ALLOWED_OUTSIDER = 'E5000000-0000-4000-8000-000000000006'
FILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'files')


def test_four_events_at_once_over_the_fleet_plane(tmp_path):
    groups = {'web': {'vms': [('web_0', 0), ('web_1', 0), ('web_2', 1), ('web_3', 1)], 'max_unavailable': '50%'},
              'db': {'vms': [('db_0', 0), ('db_1', 1)], 'max_unavailable': 1}}
    with FleetRollingWorld(tmp_path, groups, foreign=[('partner_0', 'db')], speed=1) as world:
        # Resource Graph says Completed when an event leaves IMDS: 20 s after
        # its start here, rather than the simulator's default of 10 minutes.
        short = {'linger_seconds': 20}
        world.start_scenario([
            create(FREEZE_WEB_UD0, 'Freeze', ['web_0', 'web_1'], **short),
            create(REBOOT_WEB_UD1, 'Reboot', ['web_2', 'web_3'], **short),
            create(USER_REDEPLOY_DB0, 'Redeploy', ['db_0'], event_source='User', **short),
            create(FREEZE_DB1_AND_OUTSIDER, 'Freeze', ['db_1', 'partner_0'], **short),
        ])
        run = world.run_playbook_passing_notice((FREEZE_WEB_UD0, REBOOT_WEB_UD1, USER_REDEPLOY_DB0),
                                                inventory_name('db_1'))
        assert_safe(world, run)
        assert run.returncode == 0, run.output[-3000:]
        assert world.imds_requests() == {}
        counts = world.approvals_per_event()
        for event_id in (FREEZE_WEB_UD0, REBOOT_WEB_UD1, USER_REDEPLOY_DB0):
            assert counts.get(event_id.lower()) == 1, counts
            assert run.event(event_id)['outcome'] == 'approved'
        # Every approval went through ARM, none through a VM's IMDS.
        assert {entry.get('via') for entry in world.control.approvals()} == {'arm'}
        assert FREEZE_DB1_AND_OUTSIDER.lower() not in counts
        foreign = run.event(FREEZE_DB1_AND_OUTSIDER)
        assert foreign['outcome'] == 'foreign' and foreign['foreign_resources'] == ['partner_0']
        assert foreign['hosts'] == [inventory_name('db_1')]
        for event in run.report['events']:
            assert event['times']['verified'] and event['times']['undrained']
        for host, steps in world.steps().items():
            assert steps[-1][1] == 'undrain', (host, steps)


def test_an_acknowledgement_releases_only_the_vms_its_events_named_when_read(tmp_path):
    """With rolling_allow_foreign_resources, a Freeze of db_0 and partner_0 (outside the run) is acknowledged; and
    Azure adds web_1 to a Freeze of web_0 while the round drains web_0, after the round's read: the round's
    acknowledgement, which may release only the VMs its events named then, refuses that event and acknowledges the
    other; the next round drains web_1 before the grown event goes through ARM."""
    groups = {'web': {'vms': [('web_0', 0), ('web_1', 0)], 'max_unavailable': 2,
                      'settings': {'drain_tasks': os.path.join(FILES, 'drain_then_azure_grows_the_event.yml')}},
              'db': {'vms': [('db_0', 0)], 'max_unavailable': 1}}
    with FleetRollingWorld(tmp_path, groups, foreign=[('partner_0', 'db')], speed=1) as world:
        short = {'linger_seconds': 20}
        world.start_scenario([create(GROWN_WEB_0, 'Freeze', ['web_0'], **short),
                              create(FREEZE_DB0_AND_ALLOWED_OUTSIDER, 'Freeze', ['db_0', 'partner_0'], **short)])
        grow = {'host': inventory_name('web_0'), 'resources': ['web_0', 'web_1'],
                'url': '%s/events/%s/change' % (world.control.base_url, GROWN_WEB_0)}
        run = world.run_playbook(timeout=900, system_test_grow=grow, rolling_allow_foreign_resources=True)
        allowed_outsider = '%s was approved' % FREEZE_DB0_AND_ALLOWED_OUTSIDER.lower()
        problems = [problem for problem in world.invariant_problems(run)
                    if not (problem.startswith(allowed_outsider) and problem.endswith('names partner_0, outside the '
                                                                                      'inventory'))]
        assert problems == [], '\n'.join(problems) + '\n' + run.output[-3000:]
        assert run.returncode == 0, run.output[-3000:]
        assert world.imds_requests() == {}
        assert {entry.get('via') for entry in world.control.approvals()} == {'arm'}
        assert world.approvals_per_event() == {GROWN_WEB_0.lower(): 1, FREEZE_DB0_AND_ALLOWED_OUTSIDER.lower(): 1}
        grown_at = [at for at, _vm, event_ids in world.approvals() if GROWN_WEB_0.lower() in event_ids]
        assert world.drained_at(inventory_name('web_1'), grown_at[0])
        grown = run.event(GROWN_WEB_0)
        assert grown['outcome'] == 'approved'
        assert grown['hosts'] == [inventory_name('web_0'), inventory_name('web_1')]
        assert any('outside allowed_vms' in error and 'web_1' in error for error in grown['errors']), grown
        shared = run.event(FREEZE_DB0_AND_ALLOWED_OUTSIDER)
        assert shared['outcome'] == 'approved' and shared['foreign_resources'] == ['partner_0'], shared
        # Acknowledged by the task that refused the grown event, not held back with it.
        assert shared['errors'] == [], shared
        for vm in ('web_0', 'web_1', 'db_0'):
            assert [step for _at, step in world.steps()[inventory_name(vm)]] == ['drain', 'verify', 'undrain']


def test_update_domains_one_after_another_with_a_spot_preemption_over_the_fleet_plane(tmp_path):
    """The rolling issue's second overlapping scenario, over the fleet plane: three Reboots, each announced when
    the one before has left, and a Spot preemption among them; each host's impact is over only when Resource
    Graph says Completed."""
    groups = {'web': {'vms': [('web_0', 0), ('web_1', 0), ('web_2', 1), ('web_3', 1), ('web_4', 2), ('web_5', 2),
                              ('spot_0', 3)],
                      'max_unavailable': 2}}
    ud_events = ['B5000000-0000-4000-8000-00000000000%d' % index for index in range(3)]
    preemption = 'B5000000-0000-4000-8000-000000000009'
    # The clock runs ten times slower than real time: the Preempt's 30 s
    # notice leaves this machine 300 s to free a slot in the budget and drain
    # spot_0, however busy it is (at real speed a busy machine drained it as
    # NotBefore passed, and Azure started it unapproved). Resource Graph says
    # Completed 10 s (real) after an event starts, as before.
    with FleetRollingWorld(tmp_path, groups, speed=0.1) as world:
        fast = {'linger_seconds': 1, 'impact_seconds': 0.1}
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
        assert world.imds_requests() == {}
        counts = world.approvals_per_event()
        assert dict((event_id, counts.get(event_id.lower())) for event_id in ud_events + [preemption]) == \
            dict((event_id, 1) for event_id in ud_events + [preemption])
        assert {entry.get('via') for entry in world.control.approvals()} == {'arm'}
        spot = run.event(preemption)
        assert spot['outcome'] == 'approved'
        assert spot['times']['verified'] is None
        assert [step for _at, step in world.steps()[inventory_name('spot_0')]] == ['drain']
        assert all(run.event(event_id)['times']['undrained'] for event_id in ud_events)
        for vm_name in ('web_0', 'web_1', 'web_2', 'web_3', 'web_4', 'web_5'):
            assert [step for _at, step in world.steps()[inventory_name(vm_name)]] == ['drain', 'verify', 'undrain']


ACT_TASK = 'TASK [Drain, verify, approve and undrain where the plan says]'


def test_rounds_with_nothing_for_the_hosts_run_no_task_on_them(tmp_path):
    """Over the fleet plane, a round that only observes is one Resource Graph read on the controller: the per-host
    tasks run only for a round that has work for a host (here the last, which ends the run), however many
    rounds there were."""
    groups = {'web': {'vms': [('web_0', 0), ('web_1', 1), ('web_2', 2)], 'max_unavailable': 1}}
    with FleetRollingWorld(tmp_path, groups) as world:
        run = world.run_playbook(env={'ANSIBLE_DISPLAY_SKIPPED_HOSTS': 'true'}, rolling_max_rounds=4,
                                 rolling_settle_seconds=10 ** 6)
        assert run.returncode == 0, run.output[-3000:]
        assert run.report['run']['rounds'] == 4
        assert run.report['run']['stop_reason'] == 'stopped after 4 rounds (rolling_max_rounds)'
        assert run.output.count(ACT_TASK) == 1, run.output[-3000:]
        assert world.imds_requests() == {}


FREEZE_WEB_2 = 'E5000000-0000-4000-8000-000000000005'
ROUNDS_PLAY_BANNER = 'PLAY [Maintain, round after round]'
REPORT_PLAY_BANNER = 'PLAY [Report on the rolling Azure maintenance]'


def test_a_round_that_acts_offers_its_tasks_only_to_the_hosts_it_acts_on(tmp_path):
    """Over the fleet plane, the plays of rounds run on the host that keeps the run's state (the first) and on
    the hosts the round acts on: a host that no event touches gets no task from the rounds, not even a
    skipped one (with the linear strategy, a skipped task still costs a worker per host)."""
    groups = {'web': {'vms': [('web_0', 0), ('web_1', 1), ('web_2', 2), ('web_3', 3)], 'max_unavailable': 1}}
    with FleetRollingWorld(tmp_path, groups) as world:
        world.start_scenario([create(FREEZE_WEB_2, 'Freeze', ['web_2'], linger_seconds=20)])
        run = world.run_playbook(env={'ANSIBLE_DISPLAY_SKIPPED_HOSTS': 'true'})
        assert_safe(world, run)
        assert run.returncode == 0, run.output[-3000:]
        assert world.approvals_per_event() == {FREEZE_WEB_2.lower(): 1}
        assert [step for _at, step in world.steps()[inventory_name('web_2')]] == ['drain', 'verify', 'undrain']
        assert set(world.steps()) == {inventory_name('web_2')}
        rounds = run.output[run.output.index(ROUNDS_PLAY_BANNER):run.output.index(REPORT_PLAY_BANNER)]
        # The hosts the event leaves alone: no task, no skipped line.
        for vm_name in ('web_1', 'web_3'):
            assert '[%s]' % inventory_name(vm_name) not in rounds, rounds[-3000:]
        # The host it touches got its drain, verify and undrain, and the keeper ran the rounds.
        assert '[%s]' % inventory_name('web_2') in rounds
        assert '[%s' % inventory_name('web_0') in rounds


LAST_PLAY_ACTS = 'TASK [Act on the plan of the play before]'
ROUND_ON_EVERY_HOST = re.compile(r'^included: \S+/rolling_round_resource_graph\.yml for (.+) => \(item=round [0-9]+\)$',
                                 re.M)


def test_when_the_plays_of_rounds_run_out_the_last_one_goes_on_over_every_host(tmp_path):
    """The plays of rounds that run on few hosts are bounded by the number of plays; the last play runs on
    every host, acts on the plan it was handed and goes on round after round as before. Here four plays of
    rounds and one round a play (test-only overrides of the playbook's private variables) make an event
    cross from the plays on few hosts to the last one."""
    groups = {'web': {'vms': [('web_0', 0), ('web_1', 1), ('web_2', 2)], 'max_unavailable': 1}}
    with FleetRollingWorld(tmp_path, groups) as world:
        world.start_scenario([create(FREEZE_WEB_2, 'Freeze', ['web_2'], linger_seconds=20)])
        # The last play includes all its batches at its start: with batches of
        # one round, as many as rolling_max_rounds (1,000 by default, most of
        # this test's CPU). The run needs about 15 rounds, which start at
        # least the poll interval (2 s) apart however fast the machine is.
        run = world.run_playbook(env={'ANSIBLE_DISPLAY_SKIPPED_HOSTS': 'false'}, _rolling_round_plays=4,
                                 _rolling_batch=1, rolling_max_rounds=60)
        assert_safe(world, run)
        assert run.returncode == 0, run.output[-3000:]
        assert run.report['run']['stop_reason'].startswith('nothing pending'), run.report['run']
        assert world.approvals_per_event() == {FREEZE_WEB_2.lower(): 1}
        assert [step for _at, step in world.steps()[inventory_name('web_2')]] == ['drain', 'verify', 'undrain']
        assert set(world.steps()) == {inventory_name('web_2')}
        event = run.event(FREEZE_WEB_2)
        assert event['outcome'] == 'approved' and event['times']['undrained'], event
        # The last play acted on the plan it was handed, then made its rounds on every host.
        last_play = run.output.split(ROUNDS_PLAY_BANNER)[4]
        assert LAST_PLAY_ACTS in last_play, last_play[-3000:]
        rounds = ROUND_ON_EVERY_HOST.findall(last_play)
        assert rounds, last_play[-3000:]
        assert all(sorted(hosts.split(', ')) == [inventory_name(vm) for vm in ('web_0', 'web_1', 'web_2')]
                   for hosts in rounds), rounds
        # The plays before it made no such round.
        assert not ROUND_ON_EVERY_HOST.findall(''.join(run.output.split(ROUNDS_PLAY_BANNER)[:4]))
