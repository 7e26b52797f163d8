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

Baseline: json.loads of the same body, the least any client does with a
document, timed right before each round so both see the same machine load.
Figure: fastest round / fastest json.loads (the fastest run is the one no
other process interrupted: on a busy machine medians measure the machine).
Target: at most 10, i.e. normalizing, filtering and annotating cost no more
than ten decodes of the document. The figures are
printed with whether the target is met; the script does not fail on the
target.

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
TARGET_RATIO = 10.0
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
    print('method: rounds timed with perf_counter, each right after json.loads of the same body (the baseline); '
          'figure = fastest round / fastest json.loads, as interruptions by other processes only add time')
    worst_ratio = 0.0
    for label, selection in selections:
        result = one_round(document_module, info_module, body, selection)  # warm-up, and a sanity check
        if len(result['raw']['Events']) != EVENTS:
            print('ERROR: the document did not survive the round trip', file=sys.stderr)
            return 1
        timings_ms, baseline_ms = [], []
        for dummy in range(args.rounds):
            started = time.perf_counter()
            json.loads(body)
            decoded = time.perf_counter()
            one_round(document_module, info_module, body, selection)
            finished = time.perf_counter()
            baseline_ms.append((decoded - started) * 1000.0)
            timings_ms.append((finished - decoded) * 1000.0)
        ratio = min(timings_ms) / min(baseline_ms)
        worst_ratio = max(worst_ratio, ratio)
        print('  %-31s min %.3f ms  median %.3f ms  (json.loads min %.3f ms)  ratio %.1fx  '
              '(%d events selected, %d for this VM)'
              % (label, min(timings_ms), statistics.median(timings_ms), min(baseline_ms), ratio,
                 len(result['events']), len(result['this_vm_events'])))
    verdict = 'MET' if worst_ratio <= TARGET_RATIO else 'NOT MET'
    print('target: parse-and-select <= %.0fx json.loads -> %s (worst %.1fx)' % (TARGET_RATIO, verdict, worst_ratio))
    return 0


if __name__ == '__main__':
    sys.exit(main())
