#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Figures of the rolling maintenance controller at 10, 50 and 100 simulated hosts.

For each fleet size N (one inventory group, local connection, no drain tasks,
simulator on ports the kernel chooses, its clock at real speed, throttle off):

1. Floor, measured in the same run: one ad-hoc `scheduled_events_info` read
   of all N hosts (`ansible all -m ...`, the Python module on every host).
2. Round time: the marginal cost of a round, (wall of a run of 1+K idle
   rounds - wall of a run of 1 idle round) / K, from the reports' own
   wall_seconds, and the CPU seconds of all processes per round the same way.
   Baseline in the same run: the same rounds with every host read through
   the Python module (`scheduled_events_remote_http=module`), which is how
   every round read before the action read local connections in-process.
3. Detection to approval for a User event created once the run's rounds
   have begun (the first read of its VM): "detected" is when the event
   appeared in the simulator (its created_at), "approved"
   the simulator's log of the approval POST; and drained -> approved from the
   report, against the round time (the goal: within one round).
4. Total wall time of that run (ansible-playbook start to exit, including
   SETTLE s with nothing pending at the end), and its growth per host
   between the smallest and the largest size.

Then the soak (--soak-rounds, default 1000): one run of that many idle rounds
back to back over --soak-hosts hosts; every few seconds the rounds done so
far (the simulator's count of reads of one VM), the resident memory and the
CPU time of the ansible-playbook process; prints wall and controller CPU time
per round and memory over the first and the last tenth of the rounds. "Flat"
compares the controller's CPU per round, which does not change with the
machine's load as the wall time does. Baseline in the same run: the same
number of rounds over as many hosts of one play with the same loop shape
(batches of 25 included rounds, each a per-host task, a run_once task and an
include on one host) and trivial tasks: what ansible-core's include loop
costs when one play runs every round.

Goals (issue 11; 2-core machine, local connections): a round over 100 hosts
under 15 s, detection to approval with no drain tasks under 20 s at 100 hosts,
wall time growing under 0.5 s per host, User events approved within one round
after their hosts are drained, time and memory per round flat over 1,000
rounds. Prints the figures, their method, the load average, and whether each
goal is met; fails only when it cannot measure.

Run alone:  .venv/bin/python tests/benchmarks/bench_rolling.py [--sizes 10,50,100] [--forks 50] [--idle-rounds 4]
            [--soak-rounds 1000] [--soak-hosts 2]
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO_ROOT, 'tests', 'rolling'))

from rolling_harness import PLAYBOOK, RollingWorld, parse_iso  # noqa: E402 pylint: disable=wrong-import-position
from imds_simulator.process import ends_with_this_process  # noqa: E402 pylint: disable=wrong-import-position

from process_figures import cpu_seconds, load_average, memory_kib  # noqa: E402 pylint: disable=wrong-import-position

USER_EVENT = 'BE000000-0000-4000-8000-000000000001'
# Long enough that a run under load does not end before its first round has seen the event.
SETTLE = 60
QUIET = {'ANSIBLE_STDOUT_CALLBACK': 'azure_maintenance.scheduled_events.quiet'}
# The soak samples every 2 s and compares its first and last tenth of the
# rounds: about 2 idle rounds a second over 2 hosts here, so a tenth of 200
# rounds spans several samples (fewer rounds could fall between two).
MIN_SOAK_ROUNDS = 200


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def fleet(size):
    return {'web': {'vms': [('vm_%d' % index, index % 5) for index in range(size)], 'max_unavailable': '10%'}}


def no_tasks(world):
    return dict((group, {'max_unavailable': spec['max_unavailable']}) for group, spec in world.groups.items())


def baseline_read(world, forks):
    """Seconds for one parallel read of every host through the Python module, ad hoc."""
    inventory = world.write_inventory()
    env = world.ansible_env()
    env['ANSIBLE_FORKS'] = str(forks)
    command = [os.path.join(os.path.dirname(sys.executable), 'ansible'), 'all', '-i', inventory, '-o',
               '-m', 'azure_maintenance.scheduled_events.scheduled_events_info',
               '-a', 'endpoint={{ azure_scheduled_events_endpoint }} timeout=5 retries=1']
    started = time.time()
    result = subprocess.run(command, env=env, cwd=world.workdir, capture_output=True, text=True, timeout=900,
                            check=False)
    if result.returncode != 0:
        raise RuntimeError('the baseline read failed: %s' % (result.stdout + result.stderr)[-2000:])
    return time.time() - started


def idle_run(world, rounds, read_path):
    """``(wall seconds from first round to report, CPU seconds of every process)`` of ``rounds`` idle rounds."""
    cpu = children_cpu()
    run = world.run_playbook(timeout=1800, env=QUIET, rolling_group_settings=no_tasks(world),
                             rolling_max_rounds=rounds, rolling_settle_seconds=10 ** 6,
                             rolling_poll_interval_seconds=0.001, scheduled_events_remote_http=read_path)
    if run.returncode != 0 or not run.report or run.report['run']['rounds'] != rounds:
        raise RuntimeError('the idle run failed:\n%s' % run.output[-3000:])
    return run.report['run']['wall_seconds'], children_cpu() - cpu


def round_cost(world, extra_rounds, read_path):
    """Marginal wall and CPU seconds of one idle round."""
    one_wall, one_cpu = idle_run(world, 1, read_path)
    many_wall, many_cpu = idle_run(world, 1 + extra_rounds, read_path)
    return (many_wall - one_wall) / extra_rounds, (many_cpu - one_cpu) / extra_rounds


def measure(size, forks, idle_rounds, baseline_rounds):
    figures = {'hosts': size}
    with tempfile.TemporaryDirectory(prefix='bench-rolling-') as workdir:
        with RollingWorld(workdir, fleet(size), forks=forks, skip_linger=False) as world:
            world.control.set_throttle(enabled=False)
            figures['floor_read'] = baseline_read(world, forks)
            figures['round'], figures['round_cpu'] = round_cost(world, idle_rounds, 'auto')
            figures['round_module'], figures['round_module_cpu'] = round_cost(world, baseline_rounds, 'module')

            # The event appears once the rounds have begun (the first read of its VM), so that detection to
            # approval measures the rounds, not the playbook's start.
            mark = max([0] + [entry['seq'] for entry in world.control.log(vm='vm_1')])
            runs = []
            player = threading.Thread(target=lambda: runs.append(world.run_playbook(
                timeout=1800, env=QUIET, rolling_group_settings=no_tasks(world), rolling_settle_seconds=SETTLE,
                rolling_poll_interval_seconds=1)))
            player.start()
            try:
                world.control.wait_for(lambda control: any(
                    entry['path'].startswith('/metadata/scheduledevents')
                    for entry in control.log(since=mark, vm='vm_1')),
                    timeout=900, interval=0.5)
                world.control.create_event(event_id=USER_EVENT, event_type='Reboot', resources=['vm_1'],
                                           event_source='User', linger_seconds=30)
            finally:
                player.join(1900)
            busy = runs[0] if runs else None
            if busy is None or busy.returncode != 0 or not busy.report:
                raise RuntimeError('the run with a User event failed:\n%s' % (busy.output[-3000:] if busy else ''))
            created = parse_iso(world.control.event(USER_EVENT)['created_at'])
            approved = [at for at, _vm, ids in world.approvals() if USER_EVENT.lower() in ids]
            figures['detection_to_approval'] = approved[0] - created if approved else None
            times = busy.event(USER_EVENT)['times']
            figures['drained_to_approved'] = (parse_iso(times['approved']) - parse_iso(times['drained'])
                                              if times.get('approved') and times.get('drained') else None)
            figures['wall'] = busy.seconds
            figures['rounds'] = busy.report['run']['rounds']
    return figures


def sample_run(command, env, cwd, log_path, rounds_done):
    """Run ``command`` to its end; every 2 s, ``(seconds since start, rounds done, RSS KiB, CPU seconds)`` of the
    process (the controller: its forked workers are not counted)."""
    samples = []
    with open(log_path, 'w', encoding='utf-8') as log:
        process = subprocess.Popen(command, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, preexec_fn=ends_with_this_process())
        started = time.time()
        deadline = started + 4 * 3600
        try:
            while process.poll() is None and time.time() < deadline:
                time.sleep(2)
                samples.append((time.time() - started, rounds_done(), memory_kib(process.pid, 'VmRSS'), cpu_seconds(process.pid)))
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(30)
    if process.returncode != 0:
        with open(log_path, encoding='utf-8') as handle:
            raise RuntimeError('%s failed:\n%s' % (command[-3:], handle.read()[-3000:]))
    return samples


def soak(rounds, hosts, forks):
    """``[(seconds since start, rounds done, RSS KiB of ansible-playbook)]`` over ``rounds`` idle rounds."""
    with tempfile.TemporaryDirectory(prefix='bench-rolling-soak-') as workdir:
        with RollingWorld(workdir, fleet(hosts), forks=forks, skip_linger=False) as world:
            world.control.set_throttle(enabled=False)
            inventory = world.write_inventory()
            extra = world.extra_vars(rolling_group_settings=no_tasks(world), rolling_max_rounds=rounds,
                                     rolling_settle_seconds=10 ** 7, rolling_time_budget_seconds=10 ** 7,
                                     rolling_poll_interval_seconds=0.001)
            extra_path = os.path.join(workdir, 'soak_vars.json')
            with open(extra_path, 'w', encoding='utf-8') as handle:
                json.dump(extra, handle)
            env = world.ansible_env()
            env.update(QUIET)
            command = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', inventory, PLAYBOOK,
                       '-e', '@' + extra_path]
            done = [0, 0]

            def rounds_done():
                # Each round reads every VM once: count vm_0's reads.
                entries = world.control.log(since=done[1], vm='vm_0')
                done[1] = max([done[1]] + [entry['seq'] for entry in entries])
                done[0] += sum(1 for entry in entries if entry['method'] == 'GET'
                               and entry['path'].startswith('/metadata/scheduledevents'))
                return done[0]

            return sample_run(command, env, workdir, os.path.join(workdir, 'soak.log'), rounds_done)


# ansible-core's own cost of a loop of rounds: the playbook's shape (batches
# of 25 included rounds, each round an included file with a read on every
# host, a plan run once, and an include on one host) with trivial tasks.
INCLUDE_LOOP_PLAY = """
- hosts: all
  gather_facts: false
  tasks:
    - name: Batches
      ansible.builtin.include_tasks: batch.yml
      loop: "{{ range(0, (rounds | int + 24) // 25) | list }}"
      loop_control: {loop_var: batch}
"""
INCLUDE_LOOP_FILES = {
    'batch.yml': """
- name: Rounds
  ansible.builtin.include_tasks: round.yml
  loop: "{{ range(batch * 25 + 1, [batch * 25 + 25, rounds | int] | min + 1) | list }}"
  loop_control: {loop_var: round_number}
""",
    'round.yml': """
- name: Read
  ansible.builtin.set_fact:
    reading: "{{ {'round': round_number, 'host': inventory_hostname, 'events': range(20) | list} }}"
- name: Plan
  ansible.builtin.debug:
    msg: "round {{ round_number }}"
  run_once: true
- name: Act
  ansible.builtin.include_tasks: act.yml
  when: inventory_hostname == ansible_play_hosts[0]
""",
    'act.yml': """
- name: Step
  ansible.builtin.set_fact:
    step: "{{ round_number }}"
""",
}


def include_loop_soak(rounds, hosts, forks):
    """The soak's baseline: the same samples for ``rounds`` rounds of INCLUDE_LOOP_PLAY over ``hosts`` local hosts."""
    with tempfile.TemporaryDirectory(prefix='bench-rolling-include-loop-') as workdir:
        files = dict(INCLUDE_LOOP_FILES, **{'play.yml': INCLUDE_LOOP_PLAY})
        for name, text in files.items():
            with open(os.path.join(workdir, name), 'w', encoding='utf-8') as handle:
                handle.write(text)
        with open(os.path.join(workdir, 'inventory.ini'), 'w', encoding='utf-8') as handle:
            for index in range(hosts):
                handle.write('host_%d ansible_connection=local ansible_python_interpreter=%s\n'
                             % (index, sys.executable))
        env = dict(os.environ, ANSIBLE_FORKS=str(forks), ANSIBLE_LOCALHOST_WARNING='False', ANSIBLE_NOCOLOR='1',
                   ANSIBLE_LOCAL_TEMP=os.path.join(workdir, 'tmp'))
        log_path = os.path.join(workdir, 'loop.log')
        command = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'inventory.ini',
                   'play.yml', '-e', 'rounds=%d' % rounds]

        def rounds_done():
            with open(log_path, encoding='utf-8', errors='replace') as handle:
                return handle.read().count('TASK [Plan]')

        return sample_run(command, env, workdir, log_path, rounds_done)


def soak_figures(samples, rounds):
    """``(wall seconds per round, max RSS MiB, controller CPU seconds per round)`` over the first and the last
    tenth of the rounds (``None`` figures when a window had too few samples)."""
    tenth = max(rounds // 10, 1)
    usable = [sample for sample in samples if sample[2] is not None and sample[3] is not None]

    def window(low, high):
        inside = [sample for sample in usable if low <= sample[1] <= high]
        if len(inside) < 2 or inside[-1][1] == inside[0][1]:
            return None, None, None
        done = inside[-1][1] - inside[0][1]
        return ((inside[-1][0] - inside[0][0]) / done, max(sample[2] for sample in inside) / 1024.0,
                (inside[-1][3] - inside[0][3]) / done)

    return window(0, tenth), window(rounds - 2 * tenth, rounds)


def print_soak(label, samples, rounds):
    """Print the soak's figures; return whether time (the controller's CPU) and memory per round stayed flat."""
    (first_round, first_rss, first_cpu), (last_round, last_rss, last_cpu) = soak_figures(samples, rounds)
    if first_round is None or last_round is None:
        # One sample every 2 s: a tenth of a short soak can pass between two samples.
        sys.exit('%s: the first or the last tenth of its %d rounds had fewer than two samples (one every 2 s), so '
                 'nothing can be compared: run more rounds (--soak-rounds, %d at least; 1000 by default).'
                 % (label, rounds, MIN_SOAK_ROUNDS))
    growth = (last_rss - first_rss) * 1024.0 / max(samples[-1][1] - rounds // 10, 1)
    print('%s: first tenth %.2f s/round (controller CPU %.3f s), max RSS %.0f MiB | last tenth %.2f s/round '
          '(controller CPU %.3f s), max RSS %.0f MiB | about %.0f KiB more per round | %d rounds in %.0f s | load %s'
          % (label, first_round, first_cpu, first_rss, last_round, last_cpu, last_rss, growth, samples[-1][1],
             samples[-1][0], load_average()))
    return last_cpu < 1.5 * max(first_cpu, 0.001) and last_rss < 1.25 * first_rss


def print_goals(results):
    biggest = results[-1]
    if len(results) > 1:
        slope = (results[-1]['wall'] - results[0]['wall']) / float(results[-1]['hosts'] - results[0]['hosts'])
        print('wall growth: %.3f s per host (goal < 0.5): %s' % (slope, 'met' if slope < 0.5 else 'NOT met'))
    print('round at %d hosts: %.1f s (goal < 15 s at 100): %s' % (
        biggest['hosts'], biggest['round'], 'met' if biggest['round'] < 15 else 'NOT met'))
    d2a = biggest['detection_to_approval']
    print('detection->approval at %d hosts: %s (goal < 20 s at 100): %s' % (
        biggest['hosts'], seconds(d2a), 'met' if d2a is not None and d2a < 20 else 'NOT met'))
    late = [figures['hosts'] for figures in results if figures['drained_to_approved'] is None
            or figures['drained_to_approved'] > max(figures['round'], 1.0)]
    print('User event approved within one round of its drain: %s' % (
        'met at every size' if not late else 'NOT met at %s hosts' % ', '.join(map(str, late))))


def seconds(value):
    return '%.1f s' % value if value is not None else 'never'


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--sizes', default='10,50,100')
    parser.add_argument('--forks', type=int, default=50)
    parser.add_argument('--idle-rounds', type=int, default=4, help='K: extra idle rounds measured per size')
    parser.add_argument('--baseline-rounds', type=int, default=2, help='K for the Python-module baseline')
    parser.add_argument('--soak-rounds', type=int, default=1000, help='0 to skip the soak')
    parser.add_argument('--soak-hosts', type=int, default=2)
    args = parser.parse_args()
    sizes = [value.strip() for value in args.sizes.split(',') if value.strip()]
    if not sizes or not all(value.isdigit() and int(value) > 0 for value in sizes):
        parser.error('--sizes takes fleet sizes of 1 host or more, separated by commas (10,50,100), not %r'
                     % args.sizes)
    sizes = [int(value) for value in sizes]
    for option, value in (('--forks', args.forks), ('--idle-rounds', args.idle_rounds),
                          ('--baseline-rounds', args.baseline_rounds), ('--soak-hosts', args.soak_hosts)):
        if value < 1:
            parser.error('%s must be 1 or more, not %d' % (option, value))
    if args.soak_rounds and args.soak_rounds < MIN_SOAK_ROUNDS:
        parser.error('--soak-rounds must be 0 (no soak) or at least %d, not %d: the soak compares its first and last '
                     'tenth of the rounds, sampled every 2 s' % (MIN_SOAK_ROUNDS, args.soak_rounds))
    print('Method: per size, a simulator (speed 1, throttle off) and a local-connection inventory; forks %d; '
          'no drain tasks; quiet callback. Round = marginal wall (and CPU of every process) of one idle round, '
          'from runs of 1 and 1+%d rounds; baseline: the same with every host read through the Python module '
          '(scheduled_events_remote_http=module, 1 and 1+%d rounds); floor: one ad-hoc module read of every host. '
          'detection->approval: simulator created_at (event created once the rounds began) to the approval POST.'
          % (args.forks, args.idle_rounds, args.baseline_rounds))
    print('load average at start: %s' % load_average())
    results = []
    for size in sizes:
        figures = measure(size, args.forks, args.idle_rounds, args.baseline_rounds)
        results.append(figures)
        print('%4d hosts: round %.1f s (CPU %.1f s) | baseline round, module read %.1f s (CPU %.1f s) | floor read '
              '%.1f s | User event detection->approval %s, drained->approved %s | wall %.1f s (%d rounds) | load %s'
              % (size, figures['round'], figures['round_cpu'], figures['round_module'], figures['round_module_cpu'],
                 figures['floor_read'], seconds(figures['detection_to_approval']),
                 seconds(figures['drained_to_approved']), figures['wall'], figures['rounds'], load_average()))
        sys.stdout.flush()
    if results:
        print_goals(results)
    if args.soak_rounds:
        print('soak: %d idle rounds back to back over %d hosts (load %s)'
              % (args.soak_rounds, args.soak_hosts, load_average()))
        sys.stdout.flush()
        samples = soak(args.soak_rounds, args.soak_hosts, args.forks)
        flat = print_soak('soak', samples, args.soak_rounds)
        # The controller's own CPU per round, not the wall time, is compared: the wall time of a round
        # follows whatever else the machine runs, its work does not.
        print('time and memory per round flat over %d rounds (last tenth within 1.5x the controller\'s CPU per '
              'round, 1.25x the memory of the first): %s' % (args.soak_rounds, 'met' if flat else 'NOT met'))
        sys.stdout.flush()
        baseline = include_loop_soak(args.soak_rounds, args.soak_hosts, args.forks)
        print_soak('baseline (ansible-core include loop, trivial tasks, same rounds and hosts)', baseline,
                   args.soak_rounds)
    print('load average at end: %s' % load_average())
    return 0


if __name__ == '__main__':
    sys.exit(main())
