#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Figures of the rolling maintenance playbook, on the e2e stage (real HAProxy).

Scenario: the web group's three update domains, one after another (Freeze,
Reboot, Redeploy), each taking its VMs down for --impact real seconds, under
load through HAProxy, handled by playbooks/rolling_maintenance.yml.

1. Detection to approval per event (first round that saw it until the
   approval POST) against that event's drain time. Target: at most drain
   time + 5 s.
2. Total wall time (first detection to last return to service) against the
   sum of the events' impact durations plus drain and verify times. Target:
   at most 1.2 times that sum.
3. For contrast, the same scenario with approval off: every event waits for
   its NotBefore (15 minutes of simulated notice each).

Prints the figures and whether each target is met; fails only when it cannot
measure (the playbook fails, or haproxy is missing).

Run alone:  .venv/bin/python tests/benchmarks/bench_rolling.py [--speed 12] [--impact 30] [--no-contrast]
"""

from __future__ import absolute_import, division, print_function

import argparse
import datetime
import json
import os
import shutil
import sys
import tempfile

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO_ROOT, 'tests', 'e2e'))

from stage.haproxy import haproxy_binary  # noqa: E402 pylint: disable=wrong-import-position
from stage.rolling_stage import RollingStage, maintenance_scenario  # noqa: E402 pylint: disable=wrong-import-position

DETECTION_SLACK_SECONDS = 5.0
WALL_RATIO_TARGET = 1.2
# Its own loopback address: never meets the e2e test, the AWX test or the demo.
ADDRESS = '127.0.0.3'


def epoch(iso_text):
    return datetime.datetime.fromisoformat(iso_text.replace('Z', '+00:00')).timestamp() if iso_text else None


def scenario(speed, impact_real_seconds):
    impact = int(impact_real_seconds * speed)
    steps = [step for step in maintenance_scenario() if step['label'] in ('web_ud0', 'web_ud1', 'web_ud2')]
    for step in steps:
        step.update(impact_seconds=impact, linger_seconds=impact + int(speed))
        if step['event_type'] == 'Freeze':
            step['duration_seconds'] = impact
    return steps


def run(workdir, speed, impact, approve):
    with RollingStage(workdir, address=ADDRESS, speed=speed) as stage:
        load = stage.start_load()
        stage.start_scenario(scenario(speed, impact))
        web_only = {'web': stage.extra_vars()['rolling_group_settings']['web']}
        code, log, seconds = stage.run_playbook(approve=approve, maintenance_groups=['web'],
                                                rolling_group_settings=web_only,
                                                rolling_settle_seconds=3, rolling_time_budget_seconds=3600,
                                                rolling_event_timeout_seconds=3600)
        load.stop()
        if code != 0:
            raise SystemExit('the playbook failed (exit %d); see %s' % (code, log))
        report, dummy = stage.latest_report()
        impacts = stage.fleet.impact_log()
    return report, impacts, seconds, load.summary()


def impact_seconds_by_event(impacts):
    """Real seconds each event kept a VM down (longest VM of the event)."""
    starts, spans = {}, {}
    for entry in impacts:
        key = (entry['event_id'], entry['vm'])
        if entry['phase'] == 'start':
            starts[key] = entry['time']
        elif key in starts:
            spans[entry['event_id']] = max(spans.get(entry['event_id'], 0), entry['time'] - starts[key])
    return spans


def figures(report, impacts):
    events = [event for event in report['events'] if event['times']['approved'] or event['times']['started']]
    impact = impact_seconds_by_event(impacts)
    rows, useful = [], 0.0
    for event in events:
        durations = event['durations']
        drain = durations['drain'] or 0.0
        verify = durations['verify'] or 0.0
        useful += impact.get(event['event_id'], 0.0) + drain + verify
        rows.append({'event': '%s %s' % (event['event_type'], ','.join(event['hosts'])),
                     'detection_to_approval': durations['detection_to_approval'], 'drain': drain, 'verify': verify,
                     'impact': round(impact.get(event['event_id'], 0.0), 2)})
    first = min(epoch(event['times']['detected']) for event in events)
    last = max(epoch(event['times']['undrained'] or event['times']['completed']) for event in events)
    return rows, last - first, useful


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--speed', type=float, default=12.0, help='simulated seconds per real second')
    parser.add_argument('--impact', type=float, default=30.0, help='real seconds each event keeps its VMs down')
    parser.add_argument('--no-contrast', action='store_true', help='skip the run without approval')
    args = parser.parse_args()
    if haproxy_binary() is None:
        raise SystemExit('haproxy is not installed (apt-get install haproxy)')
    workdir = tempfile.mkdtemp(prefix='bench-rolling-')
    try:
        report, impacts, seconds, load = run(os.path.join(workdir, 'approve'), args.speed, args.impact, True)
        rows, wall, useful = figures(report, impacts)
        print('Rolling maintenance, 3 update domains of 2 VMs, %.0f s impacts, speed %g, load %s req/s, %d failed'
              % (args.impact, args.speed, load['rate'], load['failed']))
        print('%-22s %12s %8s %8s %8s %s' % ('event', 'detect->ok', 'drain', 'verify', 'impact', 'target'))
        all_met = True
        for row in rows:
            limit = row['drain'] + DETECTION_SLACK_SECONDS
            met = row['detection_to_approval'] is not None and row['detection_to_approval'] <= limit
            all_met = all_met and met
            print('%-22s %11.2fs %7.2fs %7.2fs %7.2fs %s (<= %.2fs)' % (
                row['event'], row['detection_to_approval'] or -1, row['drain'], row['verify'], row['impact'],
                'met' if met else 'MISSED', limit))
        ratio = wall / useful if useful else float('inf')
        print('detection to approval: target drain + %.0f s %s' % (DETECTION_SLACK_SECONDS, 'met' if all_met else 'MISSED'))
        print('total wall %.1f s vs impacts+drain+verify %.1f s: ratio %.2f, target <= %.1f %s'
              % (wall, useful, ratio, WALL_RATIO_TARGET, 'met' if ratio <= WALL_RATIO_TARGET else 'MISSED'))
        summary = {'detection_to_approval': rows, 'wall_seconds': round(wall, 2), 'useful_seconds': round(useful, 2),
                   'wall_ratio': round(ratio, 3), 'playbook_seconds': round(seconds, 1)}
        if not args.no_contrast:
            report, impacts, seconds, load = run(os.path.join(workdir, 'wait'), args.speed, args.impact, False)
            dummy, wall_waiting, dummy = figures(report, impacts)
            print('without approval (every event waits for its NotBefore): wall %.1f s, %.1fx the approving run'
                  % (wall_waiting, wall_waiting / wall))
            summary['no_approval_wall_seconds'] = round(wall_waiting, 2)
        print(json.dumps(summary, sort_keys=True))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
