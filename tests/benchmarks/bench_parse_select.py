#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How long the core takes to parse a large document and select from it.

The document has 100 events of 50 resources each, far more than a real VM
ever sees, so the figure bounds what a poll costs. One measured round is what
scheduled_events_info does with a body: decode the bytes, normalize, apply the
event filters, annotate every event for this VM and pick this VM's events.

Target: under 5 ms per round. The figures are printed with whether the target
is met; the script does not fail on the target (timings vary with machines).

Run alone:  .venv/bin/python tests/benchmarks/bench_parse_select.py [--rounds N]
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import statistics
import sys
import time
import uuid

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET_MS = 5.0
EVENTS = 100
RESOURCES_PER_EVENT = 50
EVENT_TYPES = ('Freeze', 'Reboot', 'Redeploy', 'Preempt', 'Terminate')


def import_core():
    """Import the core as its own package, the way the hook service ships it (no Ansible needed)."""
    sys.path.insert(0, os.path.join(REPO_ROOT, 'plugins'))
    from module_utils import _se_document, _se_info  # pylint: disable=import-error
    return _se_document, _se_info


def big_document():
    """100 events x 50 resources, every type, status and source, NotBefore in the documented form."""
    events = []
    for index in range(EVENTS):
        started = index % 4 == 0
        events.append({
            'EventId': str(uuid.UUID(int=index + 1)).upper(),
            'EventStatus': 'Started' if started else 'Scheduled',
            'EventType': EVENT_TYPES[index % len(EVENT_TYPES)],
            'ResourceType': 'VirtualMachine',
            'Resources': ['vmss_%d' % ((index + offset) % 500) for offset in range(RESOURCES_PER_EVENT)],
            'NotBefore': '' if started else 'Mon, 11 Apr 2022 22:%02d:58 GMT' % (index % 60),
            'Description': 'Benchmark event %d' % index,
            'EventSource': 'User' if index % 3 == 0 else 'Platform',
            'DurationInSeconds': 5 if index % 5 == 0 else -1,
        })
    return json.dumps({'DocumentIncarnation': 42, 'Events': events}).encode('utf-8')


def one_round(document_module, info_module, body, selection):
    document = document_module.decode_document(body)
    normalized = document_module.parse_document(document)
    view = info_module.build_view(normalized, 'vmss_10', selection)
    return info_module.module_result(view, document)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--rounds', type=int, default=200, help='measured rounds (default 200)')
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error('--rounds must be 1 or more')

    document_module, info_module = import_core()
    body = big_document()
    selections = (
        ('no filter', info_module.EventSelection()),
        ('types+statuses+sources filter',
         info_module.EventSelection(['Reboot', 'Freeze', 'Redeploy'], ['Scheduled'], ['Platform'])),
    )
    print('parse-and-select: %d events x %d resources, document of %d bytes, %d rounds each'
          % (EVENTS, RESOURCES_PER_EVENT, len(body), args.rounds))
    worst_median = 0.0
    for label, selection in selections:
        result = one_round(document_module, info_module, body, selection)  # warm-up, and a sanity check
        if len(result['raw']['Events']) != EVENTS:
            print('ERROR: the document did not survive the round trip', file=sys.stderr)
            return 1
        timings_ms = []
        for dummy in range(args.rounds):
            started = time.perf_counter()
            one_round(document_module, info_module, body, selection)
            timings_ms.append((time.perf_counter() - started) * 1000.0)
        median = statistics.median(timings_ms)
        worst_median = max(worst_median, median)
        print('  %-31s median %.3f ms  min %.3f ms  max %.3f ms  (%d events selected, %d for this VM)'
              % (label, median, min(timings_ms), max(timings_ms), len(result['events']),
                 len(result['this_vm_events'])))
    verdict = 'MET' if worst_median < TARGET_MS else 'NOT MET'
    print('target: parse-and-select under %.1f ms -> %s (worst median %.3f ms)' % (TARGET_MS, verdict, worst_median))
    return 0


if __name__ == '__main__':
    sys.exit(main())
