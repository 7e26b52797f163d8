#!/usr/bin/env python
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How fast does an Event-Driven Ansible rule act on a new Scheduled Event?

Runs a real ansible-rulebook with the collection's event source (poll
interval 1 s) against the IMDS simulator, creates events one after another
and prints, over all of them, the time from the event appearing in the
simulator to:
  - the rule firing (its debug action printing), and
  - the rule's run_playbook action starting (the playbook's first task).
Needs ansible-rulebook and Java 17, like tests/eda/test_rulebook_e2e.py.

    .venv/bin/python tests/benchmarks/bench_eda_latency.py     # EDA_BENCH_EVENTS=10 by default
"""

import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'eda'))

from eda_harness import (  # noqa: E402  pylint: disable=wrong-import-position
    HarnessError,
    Rulebook,
    Simulator,
    ensure_java,
    local_inventory,
    make_collection_tree,
    rulebook_command,
    wait_until,
    write_yaml,
)
from imds_simulator.control_client import ControlError  # noqa: E402  pylint: disable=wrong-import-position

POLL_INTERVAL = 1.0
EVENT_COUNT = int(os.environ.get('EDA_BENCH_EVENTS', '10'))
STARTUP_TIMEOUT = 120.0
ACTION_TIMEOUT = 60.0

TIMESTAMP_PLAYBOOK = '''---
- name: Note when the action started
  hosts: all
  gather_facts: false
  tasks:
    - name: Write the time of the first task
      ansible.builtin.shell: "date +%s.%N > {{ record_dir }}/{{ ansible_eda.event.scheduled_event.event_id }}"
      changed_when: true
'''


def bench_rulebook(playbook_path, endpoint):
    return [{
        'name': 'EDA latency benchmark',
        'hosts': 'all',
        'match_multiple_rules': True,
        'sources': [{'azure_maintenance.scheduled_events.scheduled_events': {
            'endpoint': endpoint, 'poll_interval': POLL_INTERVAL, 'changes': ['new']}}],
        'rules': [
            {'name': 'Log', 'condition': 'event.scheduled_event is defined',
             'action': {'debug': {'msg': 'seen {{ event.scheduled_event.event_id }}'}}},
            {'name': 'Act', 'condition': 'event.scheduled_event.change == "new"',
             'action': {'run_playbook': {'name': playbook_path, 'extra_vars': {'record_dir': '{{ record_dir }}'}}}},
        ],
    }]


def describe(name, samples):
    return '%-34s p50 %5.2f s   max %5.2f s   (n=%d)' % (name, statistics.median(samples), max(samples), len(samples))


def run(work):
    ensure_java()
    rulebook_command()
    record_dir = os.path.join(work, 'records')
    os.makedirs(record_dir)
    collections = os.path.join(work, 'collections')
    make_collection_tree(collections)
    # In a directory of its own: run_playbook copies the playbook's whole
    # directory into every job, and the work directory holds the collection.
    os.makedirs(os.path.join(work, 'playbooks'))
    playbook = os.path.join(work, 'playbooks', 'timestamp.yml')
    with open(playbook, 'w', encoding='utf-8') as handle:
        handle.write(TIMESTAMP_PLAYBOOK)
    with Simulator(work, name='eda-bench') as simulator:
        endpoint = simulator.endpoint('WestNO_0')
        rulebook_path = write_yaml(os.path.join(work, 'bench.yml'), bench_rulebook(playbook, endpoint))
        inventory = local_inventory({'WestNO_0': endpoint, 'WestNO_1': simulator.endpoint('WestNO_1')})
        with Rulebook(work, rulebook_path, collections, inventory, {'record_dir': record_dir}, name='bench') as rulebook:
            wait_until(lambda: rulebook.check_running() or len(simulator.polls_of('WestNO_0')) >= 2,
                       STARTUP_TIMEOUT, 'ansible-rulebook polling the simulator', interval=0.25)
            appeared = {}
            for index in range(EVENT_COUNT):
                # Spread creations over the poll cycle so the figure covers every phase of it.
                time.sleep(0.5 + (index % 5) * POLL_INTERVAL / 5)
                event_id = simulator.control.create_event('Freeze', ['WestNO_1'], event_source='Platform')
                appeared[event_id] = time.time()
                # One event at a time: the rulebook runs actions one after
                # another, and the figure is the reaction time, not time spent
                # queued behind the previous event's playbook.
                wait_until(lambda: rulebook.check_running() or os.path.exists(os.path.join(record_dir, event_id)),
                           ACTION_TIMEOUT, 'the playbook run for event %s' % event_id, interval=0.05)
            fired = {}
            for stamp, message in rulebook.debug_messages():
                if message.startswith('seen '):
                    fired.setdefault(message.split()[1], stamp)
    detection, action = [], []
    for event_id, created in appeared.items():
        if event_id not in fired:
            raise HarnessError('the rule never fired for %s' % event_id)
        detection.append(fired[event_id] - created)
        with open(os.path.join(record_dir, event_id), encoding='ascii') as handle:
            action.append(float(handle.read().strip()) - created)
    return detection, action


def main():
    with tempfile.TemporaryDirectory(prefix='bench-eda-') as work:
        try:
            detection, action = run(work)
        except (HarnessError, ControlError) as exc:
            print('ERROR: %s' % exc, file=sys.stderr)
            return 1
    print('EDA source poll interval %.1f s, %d events, real ansible-rulebook against the IMDS simulator'
          % (POLL_INTERVAL, EVENT_COUNT))
    print('method: events created one at a time through the simulator\'s control API; "appears" = when the API '
          'confirmed the creation, "rule fires" = the rule\'s debug stamp, "playbook starts" = its first task\'s stamp')
    print(describe('event appears -> rule fires', detection))
    print(describe('event appears -> playbook starts', action))
    # A change is seen at the next poll, so detection is bounded by one
    # interval plus the time the rule engine takes.
    within = max(detection) <= POLL_INTERVAL + 0.5
    print('detection within one poll interval + 0.5 s: %s' % ('yes' if within else 'NO'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
