#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Figures of the hardened poller under IMDS faults (issue 12), each beside a fault-free baseline of the same run.

1. Identity lookup failing once at start (one HTTP 500 on instance/compute),
   an event of this VM already published: seconds from the lookup's
   recovery (its first 200 in the simulator's log) to the first prepare
   hook, and from the service's first read of the event to that hook.
   Baseline: the same without the fault. Then the lookup failing for ever:
   seconds from the first read of the event to the first prepare hook
   (events are possibly this VM's while its name is unknown).
2. A 410 storm on every approval POST for --storm-seconds: the longest gap
   between two polls (GETs) and the POSTs sent; then SIGTERM in the storm:
   seconds to stop and POSTs sent while stopping. Baseline: the longest
   gap between polls with no fault, same window.
3. scheduled_events_info with timeout 3 on an IMDS that accepts and never
   answers: wall time with deadline 10 and with the default deadline (150 s;
   skip with --quick). Baseline: the module on a healthy endpoint.

Targets (printed, not enforced unless --strict): 1 lookup recovery -> prepare
<= 2 s; 2 longest poll gap <= 2 s and <= 10 POSTs per 10 s; 3 wall time <=
deadline + 5 s.

    .venv/bin/python tests/benchmarks/bench_faults.py [--storm-seconds 10] [--quick] [--strict]
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(REPO_ROOT, 'tests', 'faults'))

from fault_harness import Service, longest_gap, requests_of, run_module, simulator  # noqa: E402

FOREVER = 100000


def _first(times):
    return min(times) if times else None


def _first_read_of(sim, vm, after):
    """Epoch of the first 200 GET of the events document at or after ``after``."""
    return _first([when for when, method, status in requests_of(sim, vm, 'GET') if status == 200 and when >= after])


def identity_figures(work_dir, fault_count):
    with simulator(work_dir) as sim:
        if fault_count:
            sim.control.add_fault('status', vm='vm0', path='compute', status=500, count=fault_count)
        created = time.time()
        sim.control.create_event('Freeze', ['vm0'])
        with Service(work_dir, sim) as service:
            service.wait_for(lambda: service.hook_runs('prepare'))
            prepared = service.hook_runs('prepare')[0]['at']

            def lookups_ok():
                return [when for when, method, dummy in requests_of(sim, 'vm0', path='/metadata/instance/compute')
                        if dummy == 200]

            if fault_count < FOREVER:
                service.wait_for(lookups_ok)
            recovered = _first(lookups_ok())
        first_read = _first_read_of(sim, 'vm0', created)
        return {'lookup_recovered_to_prepare': None if recovered is None else prepared - recovered,
                'first_read_to_prepare': prepared - first_read}


def storm_figures(work_dir, storm_seconds, with_fault):
    with simulator(work_dir) as sim:
        if with_fault:
            sim.control.add_fault('status', vm='vm0', path='scheduledevents', method='POST', status=410,
                                  count=FOREVER)
        service = Service(work_dir, sim, resource_name='vm0', poll_interval=1.0,
                          approval={'default_action': 'approve' if with_fault else 'never'})
        service.start()
        sim.control.create_event('Freeze', ['vm0'], shared_host=True)
        window_start = time.time() + 1.0
        time.sleep(storm_seconds + 1.0)
        window_end = time.time()
        gets = [when for when, method, dummy in requests_of(sim, 'vm0', 'GET') if window_start <= when <= window_end]
        posts = [when for when, method, dummy in requests_of(sim, 'vm0', 'POST')
                 if window_start <= when <= window_end]
        posts_before_stop = len(requests_of(sim, 'vm0', 'POST'))
        status, stop_seconds = service.stop()
        posts_while_stopping = len(requests_of(sim, 'vm0', 'POST')) - posts_before_stop
        return {'longest_poll_gap': longest_gap(gets), 'polls': len(gets), 'posts': len(posts),
                'stop_seconds': stop_seconds, 'stop_status': status, 'posts_while_stopping': posts_while_stopping}


def module_figures(work_dir, deadline, hung=True):
    with simulator(work_dir) as sim:
        if hung:
            sim.control.add_fault('delay', vm='vm0', path='scheduledevents', delay_seconds=300, count=FOREVER)
        args = {'endpoint': sim.endpoint('vm0'), 'timeout': 3, 'resource_name': 'vm0'}
        if deadline is not None:
            args['deadline'] = deadline
        result, seconds = run_module(work_dir, 'scheduled_events_info', args)
        return {'seconds': seconds, 'failed': bool(result.get('failed')), 'msg': result.get('msg', '')[:400]}


def _fresh(parent, name):
    path = os.path.join(parent, name)
    os.makedirs(path)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--storm-seconds', type=float, default=10.0)
    parser.add_argument('--quick', action='store_true', help='skip the 150 s default-deadline module run')
    parser.add_argument('--strict', action='store_true', help='exit 1 when a target is missed')
    options = parser.parse_args()
    parent = tempfile.mkdtemp(prefix='bench-faults-')
    missed = []
    try:
        print('1. identity lookup')
        baseline = identity_figures(_fresh(parent, 'identity-ok'), 0)
        once = identity_figures(_fresh(parent, 'identity-500-once'), 1)
        down = identity_figures(_fresh(parent, 'identity-down'), FOREVER)
        print('   baseline (no fault): first read -> prepare %.2f s' % baseline['first_read_to_prepare'])
        print('   one 500 at start: lookup recovery -> prepare %.2f s (negative: prepared before the name was known); '
              'first read -> prepare %.2f s' % (once['lookup_recovered_to_prepare'], once['first_read_to_prepare']))
        print('   lookup failing for ever: first read -> prepare %.2f s (possibly ours), name never learnt'
              % down['first_read_to_prepare'])
        if once['lookup_recovered_to_prepare'] > 2.0:
            missed.append('identity recovery -> prepare')
        print('2. 410 storm on approvals (%.0f s window, poll interval 1 s)' % options.storm_seconds)
        calm = storm_figures(_fresh(parent, 'storm-baseline'), options.storm_seconds, False)
        storm = storm_figures(_fresh(parent, 'storm'), options.storm_seconds, True)
        print('   baseline (no fault): longest gap between polls %.2f s over %d polls'
              % (calm['longest_poll_gap'], calm['polls']))
        print('   storm: longest gap between polls %.2f s over %d polls; %d POSTs in the window'
              % (storm['longest_poll_gap'], storm['polls'], storm['posts']))
        print('   SIGTERM in the storm: stopped in %.2f s (exit %s), %d POSTs while stopping'
              % (storm['stop_seconds'], storm['stop_status'], storm['posts_while_stopping']))
        if storm['longest_poll_gap'] > 2.0 or storm['posts'] > options.storm_seconds:
            missed.append('410 storm')
        print('3. scheduled_events_info, timeout 3, on an IMDS that never answers')
        healthy = module_figures(_fresh(parent, 'module-ok'), None, hung=False)
        print('   baseline (healthy IMDS): %.2f s' % healthy['seconds'])
        for deadline in ([10.0] if options.quick else [10.0, None]):
            figures = module_figures(_fresh(parent, 'module-%s' % deadline), deadline)
            shown = 'default (150)' if deadline is None else '%g' % deadline
            print('   deadline %s: %.2f s, failed=%s: %s'
                  % (shown, figures['seconds'], figures['failed'], figures['msg']))
            if figures['seconds'] > (deadline or 150.0) + 5:
                missed.append('module deadline %s' % shown)
    finally:
        shutil.rmtree(parent, ignore_errors=True)
    print('targets missed: %s' % (', '.join(missed) or 'none'))
    return 1 if missed and options.strict else 0


if __name__ == '__main__':
    sys.exit(main())
