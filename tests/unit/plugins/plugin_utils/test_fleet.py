# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the per-host merge behind the fleet_events filter (the filter's own tests cover its inputs)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._fleet import (
    host_results,
    merge_fleet_events,
)


def result(name, *events):
    return {'changed': False, 'resource_name': name, 'events': list(events)}


def event(event_id, status='Scheduled', resources=('VM_0', 'VM_1')):
    return {'event_id': event_id, 'event_type': 'Reboot', 'event_status': status, 'resources': list(resources),
            'affects_this_vm': True, 'is_leader': False, 'seconds_until_not_before': 60}


def test_host_results_keep_order_and_skip_unusable():
    per_host = {'b': result('VM_1'), 'a': result('VM_0'), 'c': {'failed': True, 'msg': 'x'},
                'd': {'skipped': True}, 'e': {'unreachable': True, 'msg': 'y'}, 'f': None}
    assert [host for host, dummy in host_results(per_host)] == ['b', 'a']
    assert [host for host, dummy in host_results(per_host, hosts=['a', 'b', 'zz'])] == ['a', 'b']


def test_first_seen_order_and_furthest_status():
    pairs = [('h0', result('VM_0', event('E1'), event('E2'))),
             ('h1', result('VM_1', event('E2', status='Started'), event('E3', resources=['VM_1'])))]
    merged = merge_fleet_events(pairs)
    assert [item['event_id'] for item in merged] == ['E1', 'E2', 'E3']
    assert merged[1]['event_status'] == 'Started' and merged[1]['seen_by'] == ['h0', 'h1']
    assert merged[2]['hosts'] == ['h1'] and merged[2]['leader_host'] == 'h1'


def test_an_older_status_does_not_replace_a_newer_one():
    pairs = [('h0', result('VM_0', event('E1', status='Started'))), ('h1', result('VM_1', event('E1')))]
    assert merge_fleet_events(pairs)[0]['event_status'] == 'Started'


def test_inputs_are_not_modified():
    original = event('E1')
    pairs = [('h0', result('VM_0', original))]
    merge_fleet_events(pairs)
    assert original == event('E1')


def test_hosts_of_two_vms_with_one_name_are_told_apart_by_who_sees_the_event():
    # app-01 in production and in staging (VM names are unique within a resource group only).
    pairs = [('stage-app-01', result('app-01')),
             ('prod-app-01', result('app-01', event('E1', resources=['app-01', 'app-02']))),
             ('prod-app-02', result('app-02', event('E1', resources=['app-01', 'app-02'])))]
    merged = merge_fleet_events(pairs)[0]
    assert merged['hosts'] == ['prod-app-01', 'prod-app-02'] and merged['leader_host'] == 'prod-app-01'
    # When none of them saw it (unreachable this time), every host of that name stays listed.
    merged = merge_fleet_events([('stage-app-01', result('app-01')), ('prod-app-01', result('app-01')),
                                 ('prod-app-02', result('app-02', event('E1', resources=['app-01', 'app-02'])))])[0]
    assert merged['hosts'] == ['stage-app-01', 'prod-app-01', 'prod-app-02']
