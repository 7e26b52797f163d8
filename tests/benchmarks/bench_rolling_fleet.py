#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rolling playbook over the fleet plane at 100, 500 and 1,000 VMs, against IMDS at 10, 50 (and 100) hosts.

For each fleet size N (one inventory group, local connection, drain, verify
and undrain tasks that do nothing, a simulator with its ARM facade on ports
the kernel chooses, its clock at real speed, Resource Graph quota off):

1. Round time: the cost of one more round with nothing to do. Two runs of
   ``rolling_maintenance`` with ``rolling_source: resource_graph`` and no
   event stop after --few-rounds and --fleet-many-rounds rounds (IMDS:
   --many-rounds), polling back to back; the difference of their wall
   times (the report's) divided by the difference of their rounds, so that
   what every run costs once (start, setup, the last round's host tasks,
   the report) cancels out. Over IMDS both runs fill the playbook's first
   batch of 25 rounds, which is copied for every host when it starts, so
   that the copies count as a fixed cost too; over the fleet plane the
   rounds of an idle run are made by the watch of the first play of rounds,
   which runs on one host, and no batch is included. The fleet plane's
   rounds are cheap, so its longer run has more of them: the noise of the
   fixed costs (several seconds at 500 VMs) would otherwise drown the
   figure.
2. Wall time: a run in which a User Freeze on one VM is drained, approved
   through ARM, verified and undrained, from ansible-playbook start to exit;
   and the event's detection-to-approval time from the run's report.
3. The controller's share of a round: one Resource Graph read of the whole
   fleet plus the planner (``rolling_fleet_reconcile``), in-process, median
   of 3; what the fleet plane itself costs, with Ansible's per-host task
   dispatch taken out. With it, at --controller-sizes, the planner's pass
   alone on a later round, through the filter (which converts its arguments
   to plain data every call) against the pass rolling_fleet_watch makes
   every round (on arguments converted once per task).

Baseline, same run: the same two figures of the IMDS playbook
(``rolling_source: imds``, every host's IMDS read each round) at
--imds-sizes hosts.

Goal (issue 14): a fleet-plane round over 1,000 VMs under 5 s. Prints the
figures, their method and whether the goal is met; fails only when it
cannot measure.

Run alone:  .venv/bin/python tests/benchmarks/bench_rolling_fleet.py [--sizes 100,500,1000] [--imds-sizes 10,50,100]
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO_ROOT, 'tests', 'rolling'))

# pylint: disable=wrong-import-position
from fleet_rolling_harness import TOKEN, FleetRollingWorld  # noqa: E402
from rolling_harness import RollingWorld, collections_path  # noqa: E402

from process_figures import load_average  # noqa: E402

USER_EVENT = 'BF000000-0000-4000-8000-000000000001'


def fleet(size):
    return {'web': {'vms': [('vm_%d' % index, index % 5) for index in range(size)], 'max_unavailable': '10%'}}


def controller_share(world, workdir):
    """Medians of 3, in seconds: ``share``, one Resource Graph read of the fleet plus one pass of the planner
    through the rolling_fleet_reconcile filter, in-process; ``filter_pass`` and ``watch_pass``, the planner pass
    alone on the same read, through the filter (which converts its arguments to plain data at every call) and
    as rolling_fleet_watch makes it every round (plan_fleet_round, on arguments converted once)."""
    sys.path.insert(0, collections_path(workdir))
    # pylint: disable=import-outside-toplevel
    from ansible_collections.azure_maintenance.scheduled_events.plugins.filter.rolling import rolling_setup
    from ansible_collections.azure_maintenance.scheduled_events.plugins.filter.rolling_fleet import (
        plan_fleet_round, rolling_fleet_reconcile, rolling_fleet_setup)
    from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_arm import ArmClient
    from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_graph import read_fleet
    with open(world.write_inventory(), encoding='utf-8') as handle:
        inventory = json.load(handle)
    hosts = dict((host, variables) for group in inventory['all']['children'].values()
                 for host, variables in group['hosts'].items())
    setup = rolling_setup(['web'], {'web': sorted(hosts)}, sorted(hosts),
                          group_settings={'web': {'max_unavailable': '10%'}}, hostvars=hosts)
    fleet_setup = rolling_fleet_setup(setup, hosts)
    times = {'share': [], 'filter_pass': [], 'watch_pass': []}
    for _attempt in range(3):
        started = time.time()
        client = ArmClient(world.simulator.arm_url, lambda: TOKEN, timeout=60)
        read = dict(read_fleet(client, fleet_setup['scope']['subscriptions'],
                               fleet_setup['scope']['resource_groups']), changed=False)
        plan = rolling_fleet_reconcile(None, setup, fleet_setup, {}, read=read)
        times['share'].append(time.time() - started)
        # A later round: the same read, planned from the state the first pass left.
        started = time.time()
        rolling_fleet_reconcile(plan['state'], setup, fleet_setup, {}, read=read)
        times['filter_pass'].append(time.time() - started)
        started = time.time()
        plan_fleet_round(plan['state'], setup, fleet_setup, {}, read, {}, time.time())
        times['watch_pass'].append(time.time() - started)
    return dict((name, statistics.median(values)) for name, values in times.items())


def measure_controller(size):
    """The controller's share of a round at ``size`` VMs, without running the playbook."""
    with tempfile.TemporaryDirectory(prefix='bench-rolling-fleet-') as workdir:
        with FleetRollingWorld(workdir, fleet(size), skip_linger=False) as world:
            # One scenario rather than one control call per event, and patience: the machine may be busy.
            world.control.timeout = 60
            world.start_scenario([{'at_seconds': 0, 'action': 'create_event', 'event_type': 'Freeze',
                                   'resources': ['vm_%d' % index], 'not_before_seconds': 900}
                                  for index in range(0, size, 2)])
            world.control.wait_for(lambda control: len(control.events()) == (size + 1) // 2, timeout=300,
                                   interval=2)
            return controller_share(world, workdir)


# Idle runs poll back to back, so that a round's figure is its work, not the poll interval.
IDLE_POLL_SECONDS = 0.01


def idle_run_seconds(world, settings, rounds):
    """Wall seconds (the report's) of a run with nothing to do that stops after ``rounds`` rounds."""
    run = world.run_playbook(timeout=3600, rolling_group_settings=settings, rolling_max_rounds=rounds,
                             rolling_settle_seconds=10 ** 6, rolling_poll_interval_seconds=IDLE_POLL_SECONDS)
    if run.returncode != 0 or not run.report or run.report['run']['rounds'] != rounds:
        raise RuntimeError('the idle run of %d rounds failed:\n%s' % (rounds, run.output[-3000:]))
    return run.report['run']['wall_seconds']


def measure(world_class, size, forks, few_rounds, many_rounds):
    figures = {'hosts': size}
    with tempfile.TemporaryDirectory(prefix='bench-rolling-fleet-') as workdir:
        with world_class(workdir, fleet(size), forks=forks) as world:
            world.control.set_throttle(enabled=False)
            settings = dict((group, {'max_unavailable': spec['max_unavailable']})
                            for group, spec in world.groups.items())
            # The cost of one more round: what a run's fixed costs (start, setup, report) cancel out of.
            few = idle_run_seconds(world, settings, few_rounds)
            many = idle_run_seconds(world, settings, many_rounds)
            figures['round'] = (many - few) / (many_rounds - few_rounds)
            figures['idle_wall'] = few
            world.start_scenario([{'at_seconds': 2, 'action': 'create_event', 'event_id': USER_EVENT,
                                   'event_type': 'Freeze', 'resources': ['vm_1'], 'event_source': 'User',
                                   'linger_seconds': 5, 'impact_seconds': 1}])
            busy = world.run_playbook(timeout=3600, rolling_group_settings=settings, rolling_settle_seconds=3,
                                      rolling_poll_interval_seconds=1)
            if busy.returncode != 0 or not busy.report:
                raise RuntimeError('the run with a User event at %d failed:\n%s' % (size, busy.output[-3000:]))
            event = busy.event(USER_EVENT)
            if event is None or event['outcome'] != 'approved':
                raise RuntimeError('the User event at %d was not approved: %s' % (size, event))
            figures['wall'] = busy.seconds
            figures['rounds'] = busy.report['run']['rounds']
            figures['seen_to_approved'] = event['durations']['detection_to_approval']
            if isinstance(world, FleetRollingWorld):
                figures['controller'] = controller_share(world, workdir)['share']
                figures['imds_requests'] = sum(world.imds_requests().values())
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--sizes', default='100,500,1000')
    parser.add_argument('--imds-sizes', default='10,50,100')
    parser.add_argument('--forks', type=int, default=50)
    # Both idle runs fill the first batch of 25 rounds (rolling_batch.yml), which
    # is copied for every host when it starts: a shorter run would copy fewer
    # rounds, and the difference would count those copies as round time.
    parser.add_argument('--few-rounds', type=int, default=25)
    parser.add_argument('--many-rounds', type=int, default=37)
    parser.add_argument('--fleet-many-rounds', type=int, default=52,
                        help='the longer idle run over the fleet plane, whose rounds are cheap: more rounds keep '
                             'the noise of the fixed costs out of the figure')
    parser.add_argument('--controller-sizes', default='100,500,1000',
                        help='sizes at which to measure the controller share alone (no playbook run)')
    args = parser.parse_args()
    print('Method: per size, a simulator (speed 1, throttle and Resource Graph quota off) and a local-connection '
          'inventory of one group; drain/verify/undrain tasks do nothing; forks %d; round = the cost of one more '
          'round with nothing to do: (wall of an idle run of %d rounds (%d over the fleet plane) - wall of one of %d) '
          '/ the difference, both polling back to back (%.2f s); wall = ansible-playbook start to exit of a run '
          'with one User Freeze approved, and its rounds; seen->approved from its report; controller share = '
          'in-process Resource Graph read + planner, median of 3; planner pass of a later round (same read, '
          'the state the first pass left) through the filter, which converts its arguments every call, against '
          'the pass rolling_fleet_watch makes each round on arguments converted once, medians of 3. '
          'Load average at start %s'
          % (args.forks, args.many_rounds, args.fleet_many_rounds, args.few_rounds, IDLE_POLL_SECONDS,
             load_average()))
    for size in [int(value) for value in args.imds_sizes.split(',') if value]:
        figures = measure(RollingWorld, size, args.forks, args.few_rounds, args.many_rounds)
        print('IMDS  %5d hosts: round %6.2f s | idle run of %d rounds %6.1f s | wall %6.1f s (%d rounds) | '
              'seen->approved %.1f s'
              % (size, figures['round'], args.few_rounds, figures['idle_wall'], figures['wall'], figures['rounds'],
                 figures['seen_to_approved']))
        sys.stdout.flush()
    for size in [int(value) for value in args.controller_sizes.split(',') if value]:
        share = measure_controller(size)
        print('fleet %5d VMs:   controller share of a round %.2f s (Resource Graph read of %d events + planner); '
              'planner pass of a later round: %.3f s through the filter, %.3f s in the watch'
              % (size, share['share'], (size + 1) // 2, share['filter_pass'], share['watch_pass']))
        sys.stdout.flush()
    biggest = None
    for size in [int(value) for value in args.sizes.split(',') if value]:
        figures = measure(FleetRollingWorld, size, args.forks, args.few_rounds, args.fleet_many_rounds)
        biggest = figures
        print('fleet %5d VMs:   round %6.2f s | idle run of %d rounds %6.1f s | wall %6.1f s (%d rounds) | '
              'seen->approved %.1f s | controller share of a round %.2f s | IMDS requests %d'
              % (size, figures['round'], args.few_rounds, figures['idle_wall'], figures['wall'], figures['rounds'],
                 figures['seen_to_approved'], figures['controller'], figures['imds_requests']))
        sys.stdout.flush()
    print('Load average at end %s' % load_average())
    if biggest is not None:
        print('fleet-plane round at %d VMs: %.2f s (goal < 5 s at 1,000): %s; controller share %.2f s'
              % (biggest['hosts'], biggest['round'], 'met' if biggest['round'] < 5 else 'NOT met',
                 biggest['controller']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
