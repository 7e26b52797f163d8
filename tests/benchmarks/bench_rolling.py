#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Figures of the rolling maintenance controller at 10, 50 and 100 simulated hosts.

For each fleet size N (one inventory group, local connection, no drain tasks,
simulator on ports the kernel chooses, its clock at real speed):

1. Baseline, measured in the same run: one ad-hoc `scheduled_events_info`
   read of all N hosts (`ansible all -m ...`), which is the floor of a round.
2. Round time: the playbook's wall time from its first round to its report
   divided by its rounds, with nothing to do (R idle rounds).
3. Detection to approval for User events: a User Reboot created 5 s into a
   run; "detected" is when the event appeared in the simulator (its
   created_at), "approved" the simulator's log of the approval POST.
4. Total wall time of that run (ansible-playbook start to exit), and its
   growth per host between the sizes.

Goals (issue 11; 2-core machine, local connections): a round over 100 hosts
under 15 s, detection to approval with no drain tasks under 20 s at 100 hosts,
wall time growing under 0.5 s per host. Prints the figures, their method and
whether each goal is met; fails only when it cannot measure.

Run alone:  .venv/bin/python tests/benchmarks/bench_rolling.py [--sizes 10,50,100] [--forks 50] [--idle-rounds 4]
"""

from __future__ import absolute_import, division, print_function

import argparse
import os
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO_ROOT, 'tests', 'rolling'))

from rolling_harness import RollingWorld, parse_iso  # noqa: E402 pylint: disable=wrong-import-position

USER_EVENT = 'BE000000-0000-4000-8000-000000000001'


def fleet(size):
    return {'web': {'vms': [('vm_%d' % index, index % 5) for index in range(size)], 'max_unavailable': '10%'}}


def no_tasks(world):
    return dict((group, {'max_unavailable': spec['max_unavailable']}) for group, spec in world.groups.items())


def baseline_read(world, forks):
    """Seconds for one parallel read of every host, ad hoc: the floor of a round."""
    inventory = world.write_inventory()
    env = world.ansible_env()
    env['ANSIBLE_FORKS'] = str(forks)
    command = [os.path.join(os.path.dirname(sys.executable), 'ansible'), 'all', '-i', inventory, '-o',
               '-m', 'azure_maintenance.scheduled_events.scheduled_events_info',
               '-a', 'endpoint={{ azure_scheduled_events_endpoint }} timeout=5 retries=1']
    started = time.time()
    result = subprocess.run(command, env=env, cwd=world.workdir, capture_output=True, text=True, timeout=600,
                            check=False)
    if result.returncode != 0:
        raise RuntimeError('the baseline read failed: %s' % (result.stdout + result.stderr)[-2000:])
    return time.time() - started


def measure(size, forks, idle_rounds):
    figures = {'hosts': size}
    with tempfile.TemporaryDirectory(prefix='bench-rolling-') as workdir:
        with RollingWorld(workdir, fleet(size), forks=forks) as world:
            world.control.set_throttle(enabled=False)
            figures['baseline_read'] = baseline_read(world, forks)

            idle = world.run_playbook(timeout=1800, rolling_group_settings=no_tasks(world),
                                      rolling_max_rounds=idle_rounds, rolling_settle_seconds=10 ** 6,
                                      rolling_poll_interval_seconds=1)
            if idle.returncode != 0 or not idle.report:
                raise RuntimeError('the idle run failed:\n%s' % idle.output[-3000:])
            figures['round'] = idle.report['run']['wall_seconds'] / max(idle.report['run']['rounds'], 1)
            figures['idle_rounds'] = idle.report['run']['rounds']

            world.start_scenario([{'at_seconds': 5, 'action': 'create_event', 'event_id': USER_EVENT,
                                   'event_type': 'Reboot', 'resources': ['vm_1'], 'event_source': 'User',
                                   'linger_seconds': 30}])
            busy = world.run_playbook(timeout=1800, rolling_group_settings=no_tasks(world),
                                      rolling_settle_seconds=3, rolling_poll_interval_seconds=1)
            if busy.returncode != 0 or not busy.report:
                raise RuntimeError('the run with a User event failed:\n%s' % busy.output[-3000:])
            created = parse_iso(world.control.event(USER_EVENT)['created_at'])
            approved = [at for at, _vm, ids in world.approvals() if USER_EVENT.lower() in ids]
            figures['detection_to_approval'] = approved[0] - created if approved else None
            figures['wall'] = busy.seconds
            figures['rounds'] = busy.report['run']['rounds']
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--sizes', default='10,50,100')
    parser.add_argument('--forks', type=int, default=50)
    parser.add_argument('--idle-rounds', type=int, default=4)
    args = parser.parse_args()
    sizes = [int(value) for value in args.sizes.split(',')]
    print('Method: per size, a simulator (speed 1, throttle off) and a local-connection inventory; forks %d; '
          'load average at start %.1f' % (args.forks, os.getloadavg()[0]))
    results = []
    for size in sizes:
        figures = measure(size, args.forks, args.idle_rounds)
        results.append(figures)
        d2a = figures['detection_to_approval']
        print('%4d hosts: baseline read %.1f s | round %.1f s (%d idle rounds) | User event detection->approval %s '
              '| wall %.1f s (%d rounds)' % (size, figures['baseline_read'], figures['round'], figures['idle_rounds'],
                                             '%.1f s' % d2a if d2a is not None else 'never', figures['wall'],
                                             figures['rounds']))
    print('load average at end %.1f' % os.getloadavg()[0])
    biggest = results[-1]
    if len(results) > 1:
        slope = (results[-1]['wall'] - results[0]['wall']) / float(results[-1]['hosts'] - results[0]['hosts'])
        print('wall growth: %.3f s per host (goal < 0.5)' % slope)
    print('round at %d hosts: %.1f s (goal < 15 s at 100): %s' % (
        biggest['hosts'], biggest['round'], 'met' if biggest['round'] < 15 else 'NOT met'))
    d2a = biggest['detection_to_approval']
    print('detection->approval at %d hosts: %s (goal < 20 s at 100): %s' % (
        biggest['hosts'], '%.1f s' % d2a if d2a is not None else 'never', 'met' if d2a is not None and d2a < 20
        else 'NOT met'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
