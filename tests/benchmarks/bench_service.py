#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Figures of the hook service daemon (role scheduled_events_service), at a 1 s poll interval.

1. Detection latency: from the simulator publishing an event to the prepare
   hook starting, over --events events (>= 50) created at random moments of
   the poll cycle. Targets: p50 <= 0.6 s, p99 <= 1.1 s.
2. Approval latency: from the last prepare hook exiting to the simulator
   logging the approval (rule approve_after_prepare). Target: < 0.2 s (p99).
3. Idle polling for --idle-seconds (default 300, or SE_BENCH_IDLE_SECONDS):
   CPU time and peak RSS of the daemon, side by side with a client written
   like the documented sample (a new requests.get each second), both running
   at the same time against their own simulated VM. Targets: daemon peak RSS
   under 30 MB; daemon CPU per poll no more than the sample's.

Starts its own simulator on free loopback ports and stops everything it
started. Fails only when it cannot measure; a missed target is printed (use
--strict to fail on it).

    .venv/bin/python tests/benchmarks/bench_service.py [--events 60] [--idle-seconds 300] [--strict]
"""

import argparse
import calendar
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(REPO_ROOT, 'tests', 'simulator'))

from imds_simulator.control_client import SimulatorControl  # noqa: E402  (path set just above)

SIMULATOR = os.path.join(REPO_ROOT, 'tests', 'simulator', 'imds-simulator')
PROGRAM = os.environ.get('SCHEDULED_EVENTS_SERVICE_PROGRAM') or os.path.join(
    REPO_ROOT, 'roles', 'scheduled_events_service', 'files', 'scheduled-events-service')
CLOCK_TICKS = os.sysconf('SC_CLK_TCK')

SAMPLE_CLIENT = '''
import sys, time
import requests

# Written like the documented polling sample: a plain requests.get every
# second, handling a document when its DocumentIncarnation changes.
url = sys.argv[1]
headers = {"Metadata": "true"}
params = {"api-version": "2020-07-01"}
last_incarnation = None
while True:
    payload = requests.get(url, headers=headers, params=params).json()
    if payload["DocumentIncarnation"] != last_incarnation:
        last_incarnation = payload["DocumentIncarnation"]
        for event in payload["Events"]:
            print(event["EventId"], event["EventType"], event["EventStatus"], flush=True)
    time.sleep(1)
'''


def free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def percentile(values, fraction):
    ordered = sorted(values)
    if not ordered:
        return float('nan')
    position = min(len(ordered) - 1, max(0, int(round(fraction * (len(ordered) - 1)))))
    return ordered[position]


def iso_to_epoch(text):
    seconds = calendar.timegm(time.strptime(text[:19], '%Y-%m-%dT%H:%M:%S'))
    fraction = text[19:].rstrip('Z')
    return seconds + (float(fraction) if fraction.startswith('.') else 0.0)


def cpu_seconds(pid):
    with open('/proc/%d/stat' % pid) as handle:
        fields = handle.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / float(CLOCK_TICKS)


def peak_rss_mb(pid):
    with open('/proc/%d/status' % pid) as handle:
        for line in handle:
            if line.startswith('VmHWM:'):
                return int(line.split()[1]) / 1024.0
    return float('nan')


def wait_until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise RuntimeError('%s did not happen within %s s' % (what, timeout))
        time.sleep(0.02)


class Bench(object):
    def __init__(self, workdir):
        self.workdir = workdir
        self.processes = []
        self.control_port = free_port()
        self.vm_ports = [free_port(), free_port()]
        self.pidfile = os.path.join(workdir, 'simulator.pid')
        self.control = SimulatorControl('http://127.0.0.1:%d' % self.control_port)

    def endpoint(self, index):
        return 'http://127.0.0.1:%d/metadata/scheduledevents' % self.vm_ports[index]

    def start_simulator(self):
        world = {'vms': [{'name': 'bench_0', 'listen': '127.0.0.1:%d' % self.vm_ports[0], 'group': 'a'},
                         {'name': 'bench_1', 'listen': '127.0.0.1:%d' % self.vm_ports[1], 'group': 'b'}],
                 'throttle': {'enabled': True, 'per_second': 5}}
        config = os.path.join(self.workdir, 'world.json')
        with open(config, 'w') as handle:
            json.dump(world, handle)
        subprocess.run([sys.executable, SIMULATOR, '--config', config, '--control', '127.0.0.1:%d' % self.control_port,
                        '--background', '--pidfile', self.pidfile, '--log-level', 'WARNING'],
                       check=True, capture_output=True, timeout=60)
        self.control.wait_until_up(timeout=20)

    def write_daemon(self, name, rules, hook_text):
        base = os.path.join(self.workdir, name)
        hooks = os.path.join(base, 'hooks')
        for phase in ('prepare', 'started', 'recover'):
            os.makedirs(os.path.join(hooks, phase), mode=0o755)
        hook = os.path.join(hooks, 'prepare', '10-mark')
        with open(hook, 'w') as handle:
            handle.write(hook_text)
        os.chmod(hook, 0o755)
        config_path = os.path.join(base, 'config.json')
        with open(config_path, 'w') as handle:
            json.dump({'endpoint': self.endpoint(0), 'poll_interval': 1.0, 'hooks_dir': hooks,
                       'state_file': os.path.join(base, 'state.json'), 'approval': {'rules': rules},
                       'log': {'format': 'text', 'level': 'warning'}}, handle)
        os.chmod(config_path, 0o644)
        for directory in (self.workdir, base, hooks):
            os.chmod(directory, 0o755)
        return config_path

    def start_daemon(self, config_path, marks):
        log = open(os.path.join(os.path.dirname(config_path), 'daemon.log'), 'w')
        process = subprocess.Popen([sys.executable, PROGRAM, '--config', config_path], stdout=log,
                                   stderr=subprocess.STDOUT, env=dict(os.environ, BENCH_MARKS=marks))
        self.processes.append(process)
        return process

    def stop(self, process):
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)

    def close(self):
        for process in self.processes:
            self.stop(process)
        subprocess.run([sys.executable, SIMULATOR, '--stop', '--pidfile', self.pidfile], capture_output=True, timeout=30,
                       check=False)


def read_marks(path):
    try:
        with open(path) as handle:
            return [line.split() for line in handle if line.strip()]
    except OSError:
        return []


def measure_detection(bench, events):
    marks = os.path.join(bench.workdir, 'detect.marks')
    config = bench.write_daemon('detect', [], '#!/bin/sh\necho "start $SE_EVENT_ID $(date +%s.%N)" >> "$BENCH_MARKS"\n')
    daemon = bench.start_daemon(config, marks)
    time.sleep(2)
    latencies = []
    for dummy in range(events):
        # A random moment of the poll cycle, as maintenance does not wait for polls.
        time.sleep(random.uniform(0.0, 1.0))
        published = time.time()
        event_id = bench.control.create_event('Freeze', ['bench_0'])
        started = wait_until(lambda: [float(m[2]) for m in read_marks(marks) if m[1] == event_id], 10,
                             'prepare hook of %s' % event_id)[0]
        latencies.append(started - published)
        bench.control.cancel_event(event_id)
    bench.stop(daemon)
    return latencies


def measure_approval(bench, events):
    marks = os.path.join(bench.workdir, 'approve.marks')
    config = bench.write_daemon('approve', [{'action': 'approve_after_prepare'}],
                                '#!/bin/sh\necho "end $SE_EVENT_ID $(date +%s.%N)" >> "$BENCH_MARKS"\n')
    daemon = bench.start_daemon(config, marks)
    time.sleep(2)
    latencies = []
    for dummy in range(events):
        time.sleep(random.uniform(0.0, 1.0))
        event_id = bench.control.create_event('Freeze', ['bench_0'])
        approval = wait_until(lambda: [a for a in bench.control.approvals() if event_id in a['event_ids']], 10,
                              'approval of %s' % event_id)[0]
        ended = [float(m[2]) for m in read_marks(marks) if m[1] == event_id][0]
        latencies.append(iso_to_epoch(approval['real_time']) - ended)
    bench.stop(daemon)
    return latencies


def measure_idle(bench, seconds):
    config = bench.write_daemon('idle', [], '#!/bin/sh\nexit 0\n')
    daemon = bench.start_daemon(config, os.devnull)
    sample_log = open(os.path.join(bench.workdir, 'sample.log'), 'w')
    sample = subprocess.Popen([sys.executable, '-c', SAMPLE_CLIENT, bench.endpoint(1)], stdout=sample_log,
                              stderr=subprocess.STDOUT, env=dict(os.environ, NO_PROXY='127.0.0.1', no_proxy='127.0.0.1'))
    bench.processes.append(sample)
    time.sleep(3)  # imports and first polls are not idle polling
    first_seq = bench.control.log()[-1]['seq'] if bench.control.log() else 0
    before = dict((name, cpu_seconds(process.pid)) for name, process in (('daemon', daemon), ('sample', sample)))
    time.sleep(seconds)
    after = dict((name, cpu_seconds(process.pid)) for name, process in (('daemon', daemon), ('sample', sample)))
    rss = dict((name, peak_rss_mb(process.pid)) for name, process in (('daemon', daemon), ('sample', sample)))
    entries = [entry for entry in bench.control.log(since=first_seq) if entry['seq'] > first_seq]
    polls = {'daemon': sum(1 for e in entries if e['vm'] == 'bench_0'), 'sample': sum(1 for e in entries if e['vm'] == 'bench_1')}
    for process in (daemon, sample):
        bench.stop(process)
    sample_log.close()
    return dict((name, {'cpu': after[name] - before[name], 'rss': rss[name], 'polls': polls[name]})
                for name in ('daemon', 'sample'))


def verdict(met):
    return 'MET' if met else 'MISSED'


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--events', type=int, default=60, help='events for the detection latency (at least 50)')
    parser.add_argument('--approvals', type=int, default=20, help='events for the approval latency')
    parser.add_argument('--idle-seconds', type=float,
                        default=float(os.environ.get('SE_BENCH_IDLE_SECONDS', '300')),
                        help='idle polling duration (default 300, or SE_BENCH_IDLE_SECONDS)')
    parser.add_argument('--strict', action='store_true', help='exit 1 when a target is missed')
    arguments = parser.parse_args()
    if arguments.events < 50:
        parser.error('--events must be at least 50 for a meaningful p99')
    workdir = tempfile.mkdtemp(prefix='bench-service-')
    bench = Bench(workdir)
    results = []
    try:
        bench.start_simulator()
        detection = measure_detection(bench, arguments.events)
        approval = measure_approval(bench, arguments.approvals)
        idle = measure_idle(bench, arguments.idle_seconds)
    finally:
        bench.close()
        shutil.rmtree(workdir, ignore_errors=True)

    p50, p99 = percentile(detection, 0.50), percentile(detection, 0.99)
    approval_p50, approval_p99 = percentile(approval, 0.50), percentile(approval, 0.99)
    per_poll = dict((name, idle[name]['cpu'] / max(1, idle[name]['polls'])) for name in idle)
    print('scheduled-events-service, poll interval 1 s')
    print('detection latency, publish -> prepare hook start, %d events: p50 %.3f s, p99 %.3f s, max %.3f s'
          % (len(detection), p50, p99, max(detection)))
    results.append(('detection p50 <= 0.6 s', p50 <= 0.6))
    results.append(('detection p99 <= 1.1 s', p99 <= 1.1))
    print('approval latency, last prepare hook exit -> approval logged, %d events: p50 %.3f s, p99 %.3f s'
          % (len(approval), approval_p50, approval_p99))
    results.append(('approval latency < 0.2 s', approval_p99 < 0.2))
    print('idle polling for %.0f s (same run, each on its own simulated VM):' % arguments.idle_seconds)
    print('  %-28s %8s %10s %14s %12s' % ('client', 'polls', 'CPU s', 'CPU ms / poll', 'peak RSS MB'))
    for name, label in (('daemon', 'scheduled-events-service'), ('sample', 'documented sample (requests.get)')):
        print('  %-28s %8d %10.2f %14.3f %12.1f'
              % (label[:28], idle[name]['polls'], idle[name]['cpu'], per_poll[name] * 1000, idle[name]['rss']))
    results.append(('daemon peak RSS < 30 MB', idle['daemon']['rss'] < 30))
    results.append(('daemon CPU per poll <= sample', per_poll['daemon'] <= per_poll['sample']))
    for name, met in results:
        print('target %-32s %s' % (name, verdict(met)))
    if arguments.strict and not all(met for dummy, met in results):
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
