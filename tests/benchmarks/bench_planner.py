#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How long the rolling planner (plugin_utils/_rolling_controller.reconcile) takes at fleet scale.

Method: one inventory group of N hosts (max_unavailable 10%), N/2 Scheduled
Freezes of two VMs each, every host answering; the figure is the fastest of
--runs first-round reconcile calls (observe + plan from an empty state), the
round in which every event is new and asks for capacity. Baseline in the same
run: a deep copy of the fleet view the planner is handed (copy.deepcopy of the
observation), the least any planner that keeps its own state pays. Target: at
1,000 hosts / 500 events under 5 s, the fleet plane's round goal, of which the
planner may take only a part. The script prints whether it is met; it does not
fail on it.

A second figure is the next round (the first round's state, the same
reading): every round after the first starts from a copy of the state, so
its baseline is copy.deepcopy of that state, what the planner paid for the
copy alone before it made its own plain copy.

Run alone:  .venv/bin/python tests/benchmarks/bench_planner.py [--sizes 100 500 1000] [--runs 3]
"""

from __future__ import absolute_import, division, print_function

import argparse
import copy
import datetime
import os
import shutil
import sys
import tempfile
import time

from process_figures import load_average

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET_SECONDS_AT_1000 = 5.0
T0 = 1700000000.0


def import_planner():
    """The planner and setup builder, through a temporary ansible_collections tree."""
    parent = tempfile.mkdtemp(prefix='bench-planner-')
    namespace = os.path.join(parent, 'ansible_collections', 'azure_maintenance')
    os.makedirs(namespace)
    os.symlink(REPO_ROOT, os.path.join(namespace, 'scheduled_events'))
    sys.path.insert(0, parent)
    from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils import (  # noqa: E402
        _rolling_controller, _rolling)  # pylint: disable=import-error
    return parent, _rolling_controller, _rolling


def iso(epoch):
    return (datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=epoch)).strftime('%Y-%m-%dT%H:%M:%SZ')


def fleet(size, controller, rolling):
    hosts = ['host-%04d' % index for index in range(size)]
    inventory = {'all': hosts, 'web': hosts, 'ungrouped': []}
    setup = rolling.build_setup(['web'], inventory, hosts, group_settings={'web': {'max_unavailable': '10%'}})
    events = []
    for index in range(size // 2):
        pair = [hosts[2 * index], hosts[2 * index + 1]]
        events.append({'event_id': 'E%04d' % index, 'event_type': 'Freeze', 'event_status': 'Scheduled',
                       'event_source': 'Platform', 'resources': ['vm-%s' % host[5:] for host in pair],
                       'not_before': iso(T0 + 900), 'duration_in_seconds': 5, 'description': '',
                       'hosts': pair, 'seen_by': list(hosts)})
    pairs = [(host, {'resource_name': 'vm-%s' % host[5:]}) for host in hosts]
    return setup, controller.observe(pairs, hosts, events)


def fastest(function, runs):
    best = float('inf')
    for _run in range(runs):
        started = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - started)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--sizes', type=int, nargs='+', default=[100, 500, 1000])
    parser.add_argument('--runs', type=int, default=3)
    args = parser.parse_args()
    parent, controller, rolling = import_planner()
    try:
        print('method: first-round reconcile of N hosts and N/2 new two-VM Freezes, fastest of %d; baseline: '
              'copy.deepcopy of the observation; load average %s' % (args.runs, load_average()))
        print('%8s %8s %12s %12s %8s %14s %16s' % ('hosts', 'events', 'planner s', 'baseline s', 'ratio',
                                                   'next round s', 'deepcopy state s'))
        figures = {}
        for size in args.sizes:
            setup, observation = fleet(size, controller, rolling)
            planner = fastest(lambda: controller.reconcile(None, observation, {}, T0, setup, {}), args.runs)
            baseline = fastest(lambda: copy.deepcopy(observation), args.runs)
            state = controller.reconcile(None, observation, {}, T0, setup, {})['state']
            next_round = fastest(lambda: controller.reconcile(state, observation, {}, T0 + 5, setup, {}), args.runs)
            state_copy = fastest(lambda: copy.deepcopy(state), args.runs)
            figures[size] = planner
            ratio = planner / max(baseline, 1e-9)
            print('%8d %8d %12.3f %12.3f %8.1f %14.3f %16.3f'
                  % (size, size // 2, planner, baseline, ratio, next_round, state_copy))
        if 1000 in figures:
            print('target: 1,000 hosts under %.0f s: %s (%.2f s)' % (
                TARGET_SECONDS_AT_1000, 'met' if figures[1000] < TARGET_SECONDS_AT_1000 else 'NOT MET', figures[1000]))
    finally:
        shutil.rmtree(parent, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
