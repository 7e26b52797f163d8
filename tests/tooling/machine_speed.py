#!/usr/bin/env python
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How fast this machine does the two kinds of work `make test` is made of, so that runs on different machines compare.

`make test` is bound by CPU on a 2-core machine, and one commit's run takes
much longer on one such machine than on another (docs/development.md has
an example): a stage time says little until it is known how fast the
machine was. run-all.sh runs this before its stages start and prints the
line again in its summary:

- "Python": the CPU time of a fixed piece of pure-Python work (building,
  copying and serialising nested dicts, formatting and matching strings:
  what pytest, the simulator and ansible's templating do);
- "a fork": the CPU time, parent's and child's together, of forking a
  process that holds MEGABYTES of small Python objects, the child reading a
  part of them and exiting while the parent reads another part. Ansible
  forks a worker like this for every task and host, and on a virtual
  machine the page-table copy and the copy-on-write faults that follow can
  cost more than the worker's own work.

Each figure is the median of REPEAT measurements of CPU time (not wall
time), so a busy machine moves it less than it moves a stage time.

Usage: machine_speed.py [--repeat N] [--forks N] [--megabytes N]
"""

import argparse
import copy
import json
import os
import re
import statistics
import sys
import time

# The CPU of this process and of the children it has waited for, as the stages' per-test figures count it.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'pytest_plugins'))
from cpu_per_test import cpu_seconds_used  # noqa: E402 pylint: disable=wrong-import-position,import-error

# Bytes one object of the forked process's heap takes: a small dict, its name and number, its slot in the list
# (measured with tracemalloc; tests/tooling/tests/test_machine_speed.py checks it).
OBJECT_BYTES = 300
WORD = re.compile(r'[a-z]+_(\d+)')


def python_work():
    """A fixed amount of pure-Python work; returns a checksum so that none of it can be skipped."""
    checksum = 0
    for round_number in range(120):
        hosts = {}
        for index in range(60):
            events = [{'id': 'event_%d' % event, 'hosts': [index, event]} for event in range(4)]
            hosts['host_%d' % index] = {'vars': {'name': 'vm_%d' % index, 'round': round_number, 'events': events}}
        state = copy.deepcopy(hosts)
        text = json.dumps(state, sort_keys=True)
        checksum += len(json.loads(text)) + sum(int(number) for number in WORD.findall(text[:4000]))
    return checksum


def measure_python():
    started = time.process_time()
    python_work()
    return time.process_time() - started


def make_heap(megabytes):
    """About ``megabytes`` MB of small objects, as an ansible main process holds its inventory, plays and vars."""
    count = megabytes * 1024 * 1024 // OBJECT_BYTES
    return [{'name': 'object_%d' % index, 'value': index, 'tags': ('a', 'b')} for index in range(count)]


def touch(heap, part, parts):
    """Read every object of one part of ``heap`` (which writes its reference count, so its page is copied)."""
    size = len(heap) // parts
    total = 0
    for item in heap[part * size:(part + 1) * size]:
        total += item['value']
    return total


def measure_forks(heap, forks):
    """CPU seconds of one fork of this process, parent and child together."""
    parts = 8
    before = cpu_seconds_used()
    for number in range(forks):
        pid = os.fork()
        if pid == 0:
            # The child: read a part, then leave without Python's clean-up (as a worker's end costs nothing here).
            touch(heap, number % parts, parts)
            os._exit(0)
        touch(heap, (number + parts // 2) % parts, parts)
        _pid, status = os.waitpid(pid, 0)
        if status != 0:
            raise RuntimeError('a forked child ended with status %d' % status)
    after = cpu_seconds_used()
    return (after - before) / forks


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description='How fast this machine runs Python and forks a process.')
    parser.add_argument('--repeat', type=int, default=3, help='measurements of each figure (their median is shown)')
    parser.add_argument('--forks', type=int, default=30, help='forks per measurement')
    parser.add_argument('--megabytes', type=int, default=64, help='MB of objects the forked process holds')
    arguments = parser.parse_args(argv)
    for name in ('repeat', 'forks', 'megabytes'):
        if getattr(arguments, name) < 1:
            parser.error('--%s must be at least 1, got %d' % (name, getattr(arguments, name)))
    return arguments


def main(argv=None):
    arguments = parse_arguments(sys.argv[1:] if argv is None else argv)
    python = statistics.median(measure_python() for _measurement in range(arguments.repeat))
    heap = make_heap(arguments.megabytes)
    fork = statistics.median(measure_forks(heap, arguments.forks) for _measurement in range(arguments.repeat))
    print('machine speed: Python %d ms, a fork of a %d MB process %.1f ms (CPU time, median of %d; '
          'tests/tooling/machine_speed.py)' % (round(python * 1000), arguments.megabytes, fork * 1000,
                                               arguments.repeat))
    return 0


if __name__ == '__main__':
    sys.exit(main())
