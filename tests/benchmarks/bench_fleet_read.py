#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fleet read (Resource Graph) at 100, 500 and 1,000 VMs, against reading each VM's IMDS.

Fleet: a simulated world of N VMs in availability sets of 10, with one event
on every pair of VMs (N/2 events, N rows, so 1,000 VMs means one full page),
served by the simulator's ARM facade (no IMDS listeners: the fleet plane
never reaches a VM). One round = what the rolling controller's observe step
would do: ``read_fleet`` (query, paging, normalization; real HTTP on
loopback, quota off) plus selection. Median of --runs rounds after one
warm-up.

Baseline, same run: an in-process simulator with --imds-vms VMs (100 by
default) and the same events, read one VM after another with the
collection's IMDS client, as an IMDS-based observe step must (the real one
does it through Ansible, with connection and module start-up on top, so
this baseline is the cheapest IMDS can be).

Also at 1,000 VMs, the whole module as a task runs it: ``ansible localhost
-m scheduled_events_fleet_info`` (median of --runs), next to ``ansible
localhost -m ansible.builtin.ping`` in the same conditions, which is what
Ansible itself costs for one task.

Target: a fleet-plane read of 1,000 VMs under 5 s (the issue's goal for a
whole round). Figures are printed with whether the target is met; the
script does not fail on the target.

Run alone:  .venv/bin/python tests/benchmarks/bench_fleet_read.py [--runs 5] [--imds-vms 100]
"""

from __future__ import absolute_import, division, print_function

import argparse
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO_ROOT, 'tests', 'simulator'))
sys.path.insert(0, os.path.join(REPO_ROOT, 'tests', 'unit'))
# After tests/unit, whose conftest (not this folder's) is the one imported below.
sys.path.append(os.path.join(REPO_ROOT, 'tests', 'fleet'))
# The unit tests' conftest makes ansible_collections.azure_maintenance.scheduled_events importable.
importlib.import_module('conftest')
# pylint: disable=wrong-import-position
from imds_simulator.arm_server import ArmFacade  # noqa: E402
from imds_simulator.clock import SimClock  # noqa: E402
from imds_simulator.config import validate_config  # noqa: E402
from imds_simulator.faults import FaultRules  # noqa: E402
from imds_simulator.impact import ImpactRunner  # noqa: E402
from imds_simulator.logs import SequencedLog  # noqa: E402
from imds_simulator.simulator import Simulator  # noqa: E402
from imds_simulator.world import World  # noqa: E402
from fleet_harness import link_collection  # noqa: E402

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_arm import ArmClient  # noqa: E402
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_client import (  # noqa: E402
    ImdsClient,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_graph import (  # noqa: E402
    read_fleet,
    select_fleet_events,
)

TARGET_SECONDS = 5.0
FLEET_SIZES = (100, 500, 1000)
TOKEN = 'bench-token'


def world_config(vm_count):
    vms = [{'name': 'vm%04d' % index, 'listen': '127.0.0.1:0', 'group': 'avset%d' % (index // 10),
            'resourceGroupName': 'rg-%d' % (index % 4), 'platformUpdateDomain': str(index % 5)}
           for index in range(vm_count)]
    return validate_config({'vms': vms, 'throttle': {'enabled': False, 'per_second': 5}})


def add_events(world, vm_count):
    for index in range(0, vm_count - 1, 2):
        world.create_event({'event_type': 'Reboot', 'resources': ['vm%04d' % index, 'vm%04d' % (index + 1)],
                            'not_before_seconds': 900})


class HeadlessSimulator(object):
    """What the ARM facade needs of a simulator, without one IMDS listener per VM."""

    def __init__(self, vm_count):
        self.approval_log = SequencedLog()
        self.world = World(world_config(vm_count), SimClock(), ImpactRunner(SequencedLog()), FaultRules())
        add_events(self.world, vm_count)


def fleet_round(endpoint):
    client = ArmClient(endpoint, lambda: TOKEN, timeout=60)
    fleet = read_fleet(client)
    return fleet, select_fleet_events(fleet['events'], event_statuses=['Scheduled'])


def run_ansible(collections, module, args):
    """Seconds one ``ansible localhost -m module`` took; SystemExit if it failed."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections, ANSIBLE_LOCALHOST_WARNING='0',
               ANSIBLE_INVENTORY_UNPARSED_WARNING='0')
    command = [os.path.join(os.path.dirname(sys.executable), 'ansible'), 'localhost', '-c', 'local', '-e',
               'ansible_python_interpreter=' + sys.executable, '-m', module]
    if args:
        command += ['-a', json.dumps(args)]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit('%s failed:\n%s%s' % (module, done.stdout[-2000:], done.stderr[-2000:]))
    return seconds


def time_module(facade, runs):
    """Medians of the fleet module and of ping run by ``ansible``, alternating."""
    parent = tempfile.mkdtemp(prefix='bench-fleet-collections-')
    try:
        collections = link_collection(parent)
        fleet_args = {'management_endpoint': facade.url, 'bearer_token': TOKEN}
        module = 'azure_maintenance.scheduled_events.scheduled_events_fleet_info'
        run_ansible(collections, module, fleet_args)
        fleet, ping = [], []
        for dummy in range(runs):
            fleet.append(run_ansible(collections, module, fleet_args))
            ping.append(run_ansible(collections, 'ansible.builtin.ping', None))
        return statistics.median(fleet), statistics.median(ping)
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def time_fleet(vm_count, runs, with_module=False):
    simulator = HeadlessSimulator(vm_count)
    facade = ArmFacade(simulator, '127.0.0.1:0', {'tokens': {TOKEN: ['ScheduledEventContributor']}, 'quota': None})
    facade.start()
    try:
        fleet, selected = fleet_round(facade.url)
        if len(fleet['events']) != vm_count // 2 or fleet['rows'] != vm_count // 2 * 2 or len(selected) != len(
                fleet['events']):
            raise SystemExit('fleet read of %d VMs returned %d events from %d rows; expected %d from %d'
                             % (vm_count, len(fleet['events']), fleet['rows'], vm_count // 2, vm_count // 2 * 2))
        timings = []
        for dummy in range(runs):
            started = time.perf_counter()
            fleet_round(facade.url)
            timings.append(time.perf_counter() - started)
        module = time_module(facade, runs) if with_module else None
        return statistics.median(timings), fleet['pages'], module
    finally:
        facade.stop()


def time_imds(vm_count, runs):
    simulator = Simulator(dict(world_config(vm_count)), '127.0.0.1:0')
    simulator.start()
    add_events(simulator.world, vm_count)
    try:
        clients = [ImdsClient(endpoint='http://127.0.0.1:%d/metadata/scheduledevents' % vm.address[1])
                   for vm in simulator.world.vms.values()]
        for client in clients:  # warm-up: first calls, connections
            client.get_document()
        timings = []
        for dummy in range(runs):
            started = time.perf_counter()
            for client in clients:
                client.get_document()
            timings.append(time.perf_counter() - started)
        for client in clients:
            client.close()
        return statistics.median(timings)
    finally:
        simulator.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--runs', type=int, default=5)
    parser.add_argument('--imds-vms', type=int, default=100)
    args = parser.parse_args()
    tempfile.tempdir = tempfile.mkdtemp(prefix='bench-fleet-')
    print('fleet read through Resource Graph (simulator ARM facade, loopback), median of %d rounds:' % args.runs)
    figures = {}
    module = None
    for vm_count in FLEET_SIZES:
        seconds, pages, timed = time_fleet(vm_count, args.runs, with_module=vm_count == FLEET_SIZES[-1])
        module = timed or module
        figures[vm_count] = seconds
        print('  %5d VMs, %4d events, %d page(s): %.3f s' % (vm_count, vm_count // 2, pages, seconds))
    print('the task at %d VMs, ansible localhost -m scheduled_events_fleet_info: %.3f s; ansible.builtin.ping in the '
          'same conditions: %.3f s (Ansible\'s own cost)' % (FLEET_SIZES[-1], module[0], module[1]))
    imds = time_imds(args.imds_vms, args.runs)
    print('baseline, IMDS read VM by VM (collection client, keep-alive, no Ansible), %d VMs: %.3f s '
          '(%.1f ms per VM; %.1f s extrapolated to 1,000 VMs)' % (args.imds_vms, imds, imds / args.imds_vms * 1000,
                                                                  imds / args.imds_vms * 1000))
    met = figures[1000] < TARGET_SECONDS
    print('target: fleet read of 1,000 VMs under %.0f s: %.3f s, %s'
          % (TARGET_SECONDS, figures[1000], 'met' if met else 'NOT met'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
