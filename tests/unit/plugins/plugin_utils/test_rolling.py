# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The safety rules and the report of rolling maintenance (plugin_utils/_rolling.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._rolling import (
    RollingInputError,
    build_plan,
    build_report,
    build_setup,
    describe_entry,
    max_unavailable_count,
)

NOW = 1700000000.0
IN_15_MIN = '2023-11-14T22:28:20Z'  # NOW + 900 s
IN_8_DAYS = '2023-11-22T22:13:20Z'

INVENTORY = {'all': ['w0', 'w1', 'w2', 'w3', 'd0', 'd1'], 'web': ['w0', 'w1', 'w2', 'w3'], 'db': ['d0', 'd1'],
             'ungrouped': []}
PLAY_HOSTS = INVENTORY['all']
NAMES = {'w0': 'web_0', 'w1': 'web_1', 'w2': 'web_2', 'w3': 'web_3', 'd0': 'db_0', 'd1': 'db_1'}


def setup_for(**group_settings):
    setup = build_setup(['web', 'db'], INVENTORY, PLAY_HOSTS, group_settings=group_settings or None)
    assert setup['problems'] == []
    return setup


def event(event_id, resources, hosts, event_type='Freeze', status='Scheduled', source='Platform',
          not_before=IN_15_MIN, seen_by=None):
    return {'event_id': event_id, 'event_type': event_type, 'event_status': status, 'event_source': source,
            'resources': resources, 'hosts': hosts, 'not_before': None if status == 'Started' else not_before,
            'not_before_raw': '', 'seen_by': seen_by or hosts, 'unmatched_resources': [],
            'duration_in_seconds': 5}


def plan(events, setup=None, **kwargs):
    return build_plan(events, NAMES, setup or setup_for(web={'max_unavailable': 2}, db={'max_unavailable': 1}),
                      now=NOW, **kwargs)


def by_id(entries):
    return dict((entry['event_id'], entry) for entry in entries)


class TestMaxUnavailable:
    @pytest.mark.parametrize('value, size, expected', [
        (1, 10, 1), (3, 10, 3), ('2', 10, 2), ('25%', 8, 2), ('25%', 3, 1), ('10%', 4, 1), ('100%', 6, 6),
        ('50 %', 5, 2),
    ])
    def test_counts(self, value, size, expected):
        assert max_unavailable_count(value, size) == expected

    @pytest.mark.parametrize('value', [0, -1, '0%', '150%', 'half', True, None, '1.5'])
    def test_refuses(self, value):
        with pytest.raises(RollingInputError):
            max_unavailable_count(value, 4)


class TestSetup:
    def test_hosts_take_the_first_group_and_its_settings(self, tmp_path):
        drain = tmp_path / 'drain.yml'
        drain.write_text('---\n[]\n')
        undrain = tmp_path / 'undrain.yml'
        undrain.write_text('---\n[]\n')
        inventory = dict(INVENTORY, db=['d0', 'd1', 'w3'])
        setup = build_setup(['web', 'db'], inventory, PLAY_HOSTS,
                            group_settings={'web': {'drain_tasks': str(drain), 'undrain_tasks': str(undrain),
                                                    'max_unavailable': '50%'}},
                            host_overrides={'w1': {'drain_tasks': 'drain.yml'}}, base_dir=str(tmp_path),
                            shipped_dir=str(tmp_path))
        assert setup['problems'] == []
        assert setup['hosts']['w3']['group'] == 'web'
        assert setup['groups']['db']['hosts'] == ['d0', 'd1']
        assert setup['groups']['web']['limit'] == 2
        assert setup['hosts']['w0']['drain_tasks'] == str(drain)
        assert setup['hosts']['w1']['drain_tasks'] == os.path.join(str(tmp_path), 'drain.yml')
        assert setup['hosts']['d0']['drain_tasks'] is None
        assert setup['groups']['db']['limit'] == 1

    @pytest.mark.parametrize('kwargs, fragment', [
        ({'maintenance_groups': []}, 'maintenance_groups must be a non-empty list'),
        ({'maintenance_groups': ['web', 'nope']}, "group 'nope' is not in the inventory"),
        ({'group_settings': {'db': {'max_unavailable': 0}}}, 'group db: max_unavailable must be at least 1'),
        ({'group_settings': {'db': {'drain': 'x'}}}, "unknown key 'drain'"),
        ({'group_settings': {'cache': {}}}, "'cache', which is not in maintenance_groups"),
        ({'group_settings': {'web': {'drain_tasks': '/nonexistent/drain.yml', 'undrain_tasks': '/nonexistent/u.yml'}}},
         'does not exist'),
        ({'options': {'event_types': ['Freeze', 'Explode']}}, "'Explode' is not one of"),
        ({'options': {'event_sources': []}}, 'rolling_event_sources must be a non-empty list'),
        ({'options': {'approve': 'yes please'}}, 'rolling_approve must be true or false'),
        ({'options': {'time_budget_seconds': -5}}, 'time_budget_seconds must be a number of seconds greater than 0'),
    ])
    def test_problems_say_what_to_change(self, kwargs, fragment):
        arguments = {'maintenance_groups': ['web', 'db'], 'inventory_groups': INVENTORY, 'play_hosts': PLAY_HOSTS}
        arguments.update(kwargs)
        problems = build_setup(**arguments)['problems']
        assert any(fragment in problem for problem in problems), problems

    def test_drain_without_undrain_is_refused(self, tmp_path):
        drain = tmp_path / 'drain.yml'
        drain.write_text('---\n[]\n')
        problems = build_setup(['web'], INVENTORY, PLAY_HOSTS, group_settings={'web': {'drain_tasks': str(drain)}})['problems']
        assert any('no undrain_tasks' in problem for problem in problems)


class TestPlan:
    def test_approves_an_event_of_managed_hosts_from_its_leader(self):
        entry = plan([event('A', ['web_2', 'web_0'], ['w0', 'w2'], seen_by=['w0', 'w1', 'w2', 'w3'])])[0]
        assert entry['action'] == 'approve'
        assert entry['hosts'] == ['w2', 'w0']
        assert entry['approver'] == 'w2'
        assert entry['watcher'] == 'w1'
        assert entry['actionable'] is True
        assert entry['wait_back'] is False and entry['recovers'] is True

    def test_never_approves_an_event_naming_a_vm_outside_the_run(self):
        foreign = event('F', ['db_1', 'other_vm'], ['d1'])
        foreign['unmatched_resources'] = ['other_vm']
        entry = plan([foreign])[0]
        assert entry['action'] == 'await'
        assert entry['foreign_resources'] == ['other_vm']
        assert 'other_vm' in entry['reason']

    def test_a_host_outside_the_groups_counts_as_foreign(self):
        # fleet_events matched it (it answered), but it is not a host the run drains.
        names = dict(NAMES, x9='stranger_0')
        entries = build_plan([event('F', ['db_1', 'stranger_0'], ['d1'])], names, setup_for(), now=NOW)
        assert entries[0]['action'] == 'await' and entries[0]['foreign_resources'] == ['stranger_0']

    def test_foreign_events_are_approved_only_when_allowed(self):
        foreign = event('F', ['db_1', 'other_vm'], ['d1'])
        entry = plan([foreign], options={'allow_foreign_resources': True})[0]
        assert entry['action'] == 'approve'

    def test_awaiting_is_limited_to_near_not_before(self):
        entry = plan([event('F', ['db_1', 'other_vm'], ['d1'], not_before=IN_8_DAYS)])[0]
        assert entry['action'] == 'skip' and 'rolling_await_limit_seconds' in entry['reason']

    def test_approval_off_drains_and_waits(self):
        entry = plan([event('A', ['web_0'], ['w0'])], options={'approve': False})[0]
        assert entry['action'] == 'await' and 'approval is off' in entry['reason']

    def test_respects_max_unavailable(self):
        entries = by_id(plan([event('A', ['web_0', 'web_1', 'web_2'], ['w0', 'w1', 'w2']),
                              event('B', ['db_0', 'db_1'], ['d0', 'd1'])]))
        assert entries['A']['action'] == 'skip' and 'max_unavailable 2' in entries['A']['reason']
        assert entries['B']['action'] == 'skip' and '2 host(s) of group db' in entries['B']['reason']

    def test_hosts_already_down_count_against_max_unavailable(self):
        entries = by_id(plan([event('A', ['web_0', 'web_1'], ['w0', 'w1']),
                              event('H', ['web_3'], ['w3'], event_type='Reboot', status='Started')]))
        assert entries['H']['action'] == 'recover'
        assert entries['A']['action'] == 'skip' and 'already down (w3)' in entries['A']['reason']
        entries = by_id(plan([event('A', ['web_0', 'web_1'], ['w0', 'w1'])], unavailable_hosts=['w3']))
        assert entries['A']['action'] == 'skip'

    def test_silent_hosts_are_never_drained(self):
        entry = plan([event('A', ['web_0'], ['w0'])], unavailable_hosts=['w0'])[0]
        assert entry['action'] == 'skip' and 'did not answer' in entry['reason']

    def test_stopped_groups_get_no_approval(self):
        entries = by_id(plan([event('A', ['web_0'], ['w0']), event('B', ['db_0'], ['d0'])],
                             stopped_groups={'web': 'drain of w1 failed'}))
        assert entries['A']['action'] == 'skip' and 'drain of w1 failed' in entries['A']['reason']
        assert entries['B']['action'] == 'approve'

    def test_started_events_are_recovered_first_without_drain(self):
        entries = plan([event('B', ['db_0'], ['d0']), event('A', ['web_0'], ['w0']),
                        event('H', ['db_1'], ['d1'], event_type='Reboot', status='Started')])
        assert [entry['event_id'] for entry in entries] == ['H', 'A', 'B']
        assert entries[0]['action'] == 'recover' and entries[0]['wait_back'] is True

    def test_filters_and_bookkeeping(self):
        entries = by_id(plan([event('P', ['web_0'], ['w0'], event_type='Preempt'),
                              event('U', ['web_1'], ['w1'], source='User'),
                              event('N', ['someone_else'], []),
                              event('D', ['web_2'], ['w2'])],
                             done_ids=['d'], options={'event_sources': ['Platform']}))
        assert entries['P']['action'] == 'skip' and 'rolling_event_types' in entries['P']['reason']
        assert entries['U']['action'] == 'skip' and 'rolling_event_sources' in entries['U']['reason']
        assert entries['N']['action'] == 'ignore' and entries['N']['actionable'] is False
        assert entries['D']['action'] == 'ignore' and 'already handled' in entries['D']['reason']

    def test_deleting_events_are_not_recovered(self):
        entry = plan([event('T', ['web_0'], ['w0'], event_type='Terminate')],
                     options={'event_types': ['Terminate']})[0]
        assert entry['action'] == 'approve' and entry['recovers'] is False

    def test_describe(self):
        line = describe_entry(plan([event('A', ['web_0'], ['w0'])])[0])
        assert line.startswith('APPROVE Freeze A in group web (Platform, Scheduled NotBefore')
        assert line.endswith('on w0: all affected hosts are managed here and within max_unavailable')


class TestReport:
    def test_times_durations_and_timeline(self):
        records = {
            'A': {'event_id': 'A', 'event_type': 'Freeze', 'hosts': ['w0'], 'outcome': 'approved',
                  'detected': NOW + 1, 'drain_started': NOW + 1.5, 'drained': NOW + 3, 'approved': NOW + 3.5,
                  'started': NOW + 4, 'completed': NOW + 10, 'verified': NOW + 11, 'undrained': NOW + 11.5},
            'H': {'event_id': 'H', 'event_type': 'Reboot', 'hosts': ['w1'], 'outcome': 'recovered',
                  'detected': NOW + 12, 'started': NOW + 12, 'completed': NOW + 15, 'back': NOW + 16,
                  'verified': NOW + 17, 'undrained': NOW + 17.2},
        }
        report = build_report(records, {'started': NOW, 'finished': NOW + 20, 'stop_reason': 'done'})
        assert report['run']['wall_seconds'] == 20
        assert report['run']['approved'] == ['A']
        assert report['run']['outcomes'] == {'approved': 1, 'recovered': 1}
        first, second = report['events']
        assert first['event_id'] == 'A'
        assert first['times']['approved'] == '2023-11-14T22:13:23.500Z'
        assert first['durations'] == {'detection_to_approval': 2.5, 'drain': 1.5, 'approval_to_start': 0.5,
                                      'impact': 6.0, 'verify': 1.0, 'total': 10.5}
        phases = dict((segment['phase'], segment) for segment in first['timeline'])
        assert phases['impact'] == {'phase': 'impact', 'left': 20.0, 'width': 30.0, 'seconds': 6.0}
        assert [segment['phase'] for segment in second['timeline']] == ['impact', 'return', 'verify', 'undrain']
        assert second['times']['drained'] is None
        assert [tick['label'] for tick in report['ticks']] == ['0s', '2s', '4s', '6s', '8s', '10s', '12s', '14s',
                                                               '16s', '18s', '20s']


class TestParked:
    PARKED = {'F': {'event_id': 'F', 'event_type': 'Freeze', 'hosts': ['d1'], 'resources': ['db_1', 'other_vm'],
                    'foreign_resources': ['other_vm']}}

    def test_a_parked_event_waits_while_scheduled_and_holds_its_hosts(self):
        entries = by_id(plan([event('F', ['db_1', 'other_vm'], ['d1']), event('B', ['db_1'], ['d1'], event_type='Reboot'),
                              event('C', ['db_0'], ['d0'])], parked=self.PARKED))
        assert entries['F']['action'] == 'wait' and entries['F']['actionable'] is False and entries['F']['parked']
        assert entries['B']['action'] == 'skip' and 'drained for event F' in entries['B']['reason']
        # d1 is down for F, so draining d0 too would exceed db's max_unavailable of 1.
        assert entries['C']['action'] == 'skip' and 'already down (d1)' in entries['C']['reason']

    def test_a_parked_event_is_recovered_once_started_or_gone(self):
        started = plan([event('F', ['db_1', 'other_vm'], ['d1'], status='Started')], parked=self.PARKED)[0]
        assert started['action'] == 'recover' and started['parked']
        gone = plan([], parked=self.PARKED)[0]
        assert gone['event_id'] == 'F' and gone['event_status'] == 'Gone' and gone['action'] == 'recover'
        assert gone['hosts'] == ['d1'] and gone['recovers'] is True
        assert plan([], parked=self.PARKED, done_ids=['F']) == []

    def test_awaited_events_are_drained_before_approvable_ones(self):
        entries = plan([event('A', ['web_0'], ['w0']), event('F', ['db_1', 'other_vm'], ['d1'])])
        assert [entry['action'] for entry in entries] == ['await', 'approve']


class TestOrder:
    def test_groups_in_order_unless_not_before_is_near(self):
        soon = '2023-11-14T22:16:40Z'  # NOW + 200 s
        later = '2023-11-14T22:23:20Z'  # NOW + 600 s
        entries = plan([event('B', ['db_0'], ['d0'], not_before=soon), event('A', ['web_0'], ['w0'], not_before=IN_15_MIN),
                        event('C', ['db_1'], ['d1'], not_before=later)])
        assert [entry['event_id'] for entry in entries] == ['B', 'C', 'A']
        entries = plan([event('B', ['db_0'], ['d0'], not_before=soon), event('A', ['web_0'], ['w0'], not_before=IN_15_MIN)],
                       options={'urgent_seconds': 60})
        assert [entry['event_id'] for entry in entries] == ['A', 'B']


def test_event_row_is_fixed_width():
    from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._rolling import event_row
    row = event_row({'event_status': 'Scheduled', 'event_type': 'Freeze', 'event_source': 'Platform',
                     'not_before': '2022-04-11T22:26:58Z', 'duration_in_seconds': 5, 'leader': 'WestNO_0',
                     'event_id': 'C7061BAC-AFDC-4513-B24B-AA5F13A16123'})
    assert row == 'Scheduled  Freeze     Platform  2022-04-11T22:26:58Z  5s        WestNO_0          ' \
                  'C7061BAC-AFDC-4513-B24B-AA5F13A16123'
    started = event_row({'event_status': 'Started', 'duration_in_seconds': -1})
    assert started.split()[:5] == ['Started', '?', '-', '(started)', '?']
