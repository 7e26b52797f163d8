#!/usr/bin/env python
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the CPU of a `make test` run went, from the kernel's process accounting.

tests/tooling/cpu-profile.sh records every process that ends while the run
goes on (Debian's acct package: accton, dump-acct), daemons included, and the
process id of each stage's shell; this script gives each process to the stage
whose shell it descends from and says what kind of work it was:

- "module run": a Python process started through /bin/sh by an ansible worker
  (AnsiballZ: an interpreter that unpacks and imports the module);
- "ansible worker": a process an ansible program forked (not started anew)
  for a task and host, skipped tasks too;
- "ansible-playbook": the main process of a playbook run;
- else the program's name ("python" for pytest, ansible-test, pip, the
  simulator ...).

Processes that left their stage's process tree (the simulators and daemons
that detach) are counted apart: the stage summary of run-all.sh does not see
them either. The kernel counts in ticks of 10 ms, rounded down per process,
so short processes (workers, shells) are counted low.

Usage: cpu_breakdown.py --stages STAGE_PIDS PACCT   (STAGE_PIDS: "pid name" lines)
"""

import argparse
import collections
import subprocess
import sys

# dump-acct's fields (acct 6.6): command|version|user|system|elapsed|uid|gid|memory|io|pid|ppid|flags|...
# Times are in hundredths of a second.
TICKS_PER_SECOND = 100.0
# The kernel keeps the first 15 characters of a program's name.
ANSIBLE_PROGRAMS = ('ansible', 'ansible-playboo', 'ansible-ruleboo', 'python')
# The shell ansible runs a module's command line with (/bin/sh, Debian's dash).
MODULE_SHELLS = ('sh', 'dash')

Process = collections.namedtuple('Process', 'command cpu elapsed pid ppid forked')


def parse_dump(lines):
    """Processes from dump-acct's lines, in the order they ended."""
    processes = []
    for line in lines:
        fields = [field.strip() for field in line.split('|')]
        if len(fields) < 12:
            continue
        try:
            cpu = (float(fields[2]) + float(fields[3])) / TICKS_PER_SECOND
            processes.append(Process(fields[0], cpu, float(fields[4]) / TICKS_PER_SECOND, int(fields[9]),
                                     int(fields[10]), 'F' in fields[11]))
        except ValueError:
            continue
    return processes


def parents(processes):
    """Index of each process's parent, or None: the first process with its parent's id to end after it.

    A process id is reused only once its process has ended, and a parent ends
    after its children (a child left behind is given to init), so the first
    later record with the parent's id is the parent, however often ids wrap.
    """
    later = {}
    parent_of = [None] * len(processes)
    for index in range(len(processes) - 1, -1, -1):
        parent_of[index] = later.get(processes[index].ppid)
        later[processes[index].pid] = index
    return parent_of


def kind_of(index, processes, parent_of):
    """What work a process did (see the module's docstring)."""
    process = processes[index]
    parent = parent_of[index]
    if process.forked and process.command in ANSIBLE_PROGRAMS and parent is not None \
            and processes[parent].command == process.command and not processes[parent].forked:
        return 'ansible worker'
    if process.command.startswith('python') and not process.forked:
        ancestor = parent_of[index]
        went_through_shell = False
        while ancestor is not None and processes[ancestor].command in MODULE_SHELLS:
            went_through_shell = True
            ancestor = parent_of[ancestor]
        if went_through_shell and ancestor is not None and processes[ancestor].forked \
                and processes[ancestor].command in ANSIBLE_PROGRAMS:
            return 'module run'
    if process.command == 'ansible-playboo':
        return 'ansible-playbook'
    return process.command


def stage_shells(processes, stage_pids):
    """{index of a stage's shell: stage name}; ``stage_pids``: ``[(pid, stage name)]`` in the order they started.

    Process ids wrap within a run, so two stages' shells may have had the
    same id: the one to start first ended first. A stage's shell is a fork of
    run-all.sh, so every one has run-all.sh's id as its parent's; a later
    process that was given a stage shell's id has another parent.
    """
    names_of = collections.defaultdict(list)
    for pid, name in stage_pids:
        names_of[pid].append(name)
    candidates = [index for index, process in enumerate(processes) if process.forked and process.pid in names_of]
    if not candidates:
        return {}
    run_all, _count = collections.Counter(processes[index].ppid for index in candidates).most_common(1)[0]
    shells = {}
    for index in candidates:
        names = names_of[processes[index].pid]
        if processes[index].ppid == run_all and names:
            shells[index] = names.pop(0)
    return shells


def breakdown(processes, stage_pids):
    """{stage name or None: Counter(kind: CPU seconds)}; ``stage_pids``: ``[(pid, stage name)]`` of the stages' shells."""
    parent_of = parents(processes)
    shells = stage_shells(processes, stage_pids)
    stage_of = [None] * len(processes)
    # Parents end after their children: walk from the last process back, so
    # that each process's parent already knows its stage.
    for index in range(len(processes) - 1, -1, -1):
        parent = parent_of[index]
        if index in shells:
            stage_of[index] = shells[index]
        elif parent is not None:
            stage_of[index] = stage_of[parent]
    result = collections.defaultdict(collections.Counter)
    for index, process in enumerate(processes):
        result[stage_of[index]][kind_of(index, processes, parent_of)] += process.cpu
    return result


def report(result, top=6):
    """The table printed: stages by CPU seconds, each with its largest kinds of work, then the totals by kind."""
    lines = []
    totals = collections.Counter()
    for stage, kinds in sorted(result.items(), key=lambda item: -sum(item[1].values())):
        totals.update(kinds)
        name = stage or '(left its stage: detached daemons, simulators)'
        parts = ', '.join('%s %.0f' % (kind, seconds) for kind, seconds in kinds.most_common(top) if seconds >= 0.5)
        lines.append('  %7.1f CPU-s  %-26s %s' % (sum(kinds.values()), name, parts))
    lines.append('  by kind of work, every stage:')
    for kind, seconds in totals.most_common(12):
        lines.append('  %7.1f CPU-s  %s' % (seconds, kind))
    lines.append('  %7.1f CPU-s  in all' % sum(totals.values()))
    return '\n'.join(lines)


def read_stage_pids(path):
    """``[(pid, stage name)]`` from run-all.sh's "pid name" lines, in the order the stages started."""
    stage_pids = []
    with open(path, encoding='utf-8') as handle:
        for line in handle:
            pid, _separator, name = line.strip().partition(' ')
            if pid.isdigit() and name:
                stage_pids.append((int(pid), name))
    return stage_pids


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', 1)[0])
    parser.add_argument('--stages', required=True, help='"pid name" of each stage\'s shell (written by run-all.sh)')
    parser.add_argument('pacct', help='process accounting file (accton FILE)')
    args = parser.parse_args(argv)
    try:
        dump = subprocess.run(['dump-acct', args.pacct], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        sys.exit('ERROR: cannot read %s with dump-acct (Debian package acct): %s' % (args.pacct, error))
    print(report(breakdown(parse_dump(dump.splitlines()), read_stage_pids(args.stages))))
    return 0


if __name__ == '__main__':
    sys.exit(main())
