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
    build_report,
    build_setup,
    max_unavailable_count,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._rolling_controller import MILESTONES

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
        ({'group_settings': {'cache': {}}}, "'cache', which is neither in maintenance_groups (web, db) nor a group of the "
                                            "inventory"),
        ({'group_settings': {'web': {'drain_tasks': '/nonexistent/drain.yml', 'undrain_tasks': '/nonexistent/u.yml'}}},
         'does not exist'),
        ({'options': {'event_types': ['Freeze', 'Explode']}}, "'Explode' is not one of"),
        ({'options': {'event_sources': []}}, 'rolling_event_sources must be a non-empty list'),
        ({'options': {'approve': 'yes please'}}, 'rolling_approve must be true or false'),
        # A survey answer is text: the message says so and how to give a boolean.
        ({'options': {'approve': 'false'}}, 'got \'false\' (a string: a survey answer or -e key=value gives text'),
        ({'options': {'time_budget_seconds': -5}}, 'time_budget_seconds must be a number of seconds greater than 0'),
        ({'options': {'approve_timeout_seconds': 0}}, 'approve_timeout_seconds must be a number of seconds greater'),
    ])
    def test_problems_say_what_to_change(self, kwargs, fragment):
        arguments = {'maintenance_groups': ['web', 'db'], 'inventory_groups': INVENTORY, 'play_hosts': PLAY_HOSTS}
        arguments.update(kwargs)
        problems = build_setup(**arguments)['problems']
        assert any(fragment in problem for problem in problems), problems

    def test_a_missing_task_file_is_one_problem_naming_its_hosts_and_what_to_write(self, tmp_path):
        (tmp_path / 'drain.yml').write_text('---\n[]\n')
        shipped = tmp_path / 'shipped'
        shipped.mkdir()
        problems = build_setup(['web', 'db'], INVENTORY, PLAY_HOSTS, base_dir=str(tmp_path), shipped_dir=str(shipped),
                               group_settings={'web': {'drain_tasks': 'drain.yml', 'undrain_tasks': 'undrain.yml'},
                                               'db': {'drain_tasks': './gone/drain.yml',
                                                      'undrain_tasks': str(tmp_path / 'drain.yml')}})['problems']
        web = ', '.join(INVENTORY['web'])
        assert problems == [
            "group web: drain_tasks 'drain.yml' does not exist (looked for %s; host(s) %s); a bare name means a task "
            "file shipped in the collection's playbooks/tasks: to use the drain.yml in %s, write ./drain.yml"
            % (shipped / 'drain.yml', web, tmp_path),
            "group web: undrain_tasks 'undrain.yml' does not exist (looked for %s; host(s) %s); a bare name means a "
            "task file shipped in the collection's playbooks/tasks: give a file of your own as a path, such as "
            "./undrain.yml" % (shipped / 'undrain.yml', web),
            "group db: drain_tasks './gone/drain.yml' does not exist (looked for %s; host(s) d0, d1)"
            % (tmp_path / 'gone' / 'drain.yml'),
        ]

    def test_drain_without_undrain_is_refused(self, tmp_path):
        drain = tmp_path / 'drain.yml'
        drain.write_text('---\n[]\n')
        problems = build_setup(['web'], INVENTORY, PLAY_HOSTS, group_settings={'web': {'drain_tasks': str(drain)}})['problems']
        assert any('no undrain_tasks' in problem for problem in problems)


def test_settings_of_an_inventory_group_outside_this_run_are_left_alone():
    # One settings file for all groups, the groups chosen per launch (a survey).
    settings = {'web': {'max_unavailable': 2}, 'db': {'max_unavailable': 1}}
    setup = build_setup(['web'], INVENTORY, PLAY_HOSTS, group_settings=settings)
    assert setup['problems'] == [] and sorted(setup['groups']) == ['web']
    assert setup['groups']['web']['limit'] == 2


class TestVariableNames:
    def test_a_misspelled_variable_is_a_problem_with_a_suggestion(self):
        setup = build_setup(['web'], INVENTORY, PLAY_HOSTS,
                            options={'defined_variables': ['rolling_aprove', 'rolling_report_dir', 'other']})
        problems = [problem for problem in setup['problems'] if 'unknown variable' in problem]
        assert len(problems) == 1
        assert 'rolling_aprove (did you mean rolling_approve?)' in problems[0]

    def test_a_misspelled_group_setting_points_at_the_group_settings(self):
        setup = build_setup(['web'], INVENTORY, PLAY_HOSTS, options={'defined_variables': ['rolling_max_unavailble']})
        problem = [problem for problem in setup['problems'] if 'unknown variable' in problem][0]
        assert 'rolling_max_unavailble (did you mean the group setting max_unavailable? give it per group as ' \
               'rolling_group_settings.<group>.max_unavailable' in problem
        assert 'rolling_max_rounds' not in problem.split(': the rolling_* prefix')[0]

    def test_a_group_setting_given_as_a_variable_of_its_own_is_a_warning(self):
        # -e max_unavailable=2 was silently ignored: the limit stayed 1.
        setup = build_setup(['web'], INVENTORY, PLAY_HOSTS, options={'defined_variables': ['max_unavailable']})
        assert setup['problems'] == []
        assert setup['warnings'] == ['max_unavailable is set as a variable, which this playbook does not read: give it '
                                     'per group as rolling_group_settings.<group>.max_unavailable, or for every group '
                                     'as rolling_default_settings.max_unavailable']

    def test_an_obsolete_variable_is_a_warning(self):
        setup = build_setup(['web'], INVENTORY, PLAY_HOSTS, options={'defined_variables': ['rolling_urgent_seconds']})
        assert setup['problems'] == []
        assert setup['warnings'] == ['rolling_urgent_seconds is no longer used: events are ordered User first, then '
                                     'by NotBefore']

    @pytest.mark.parametrize('options, fragment', [
        ({'over_budget': 'ignore'}, 'rolling_over_budget must be one of fail, drain_anyway, leave'),
        ({'drain_lead_seconds': -1}, 'drain_lead_seconds must be a number of seconds greater than 0'),
    ])
    def test_new_options_are_checked(self, options, fragment):
        problems = build_setup(['web'], INVENTORY, PLAY_HOSTS, options=options)['problems']
        assert any(fragment in problem for problem in problems), problems

    @pytest.mark.parametrize('run_variables, expected', [
        # The same value everywhere, however the inventory spelled it, or a host's own task files.
        ({'rolling_source': dict((host, 'imds') for host in PLAY_HOSTS)}, []),
        ({'rolling_max_rounds': dict((host, 5 if host.startswith('w') else '5') for host in PLAY_HOSTS)}, []),
        ({'rolling_drain_tasks': {'w0': 'haproxy_drain.yml'}}, []),
        # One group's variables set it, the other's do not: the first host's value would win silently.
        ({'rolling_source': {'w0': 'resource_graph', 'w1': 'resource_graph', 'w2': 'resource_graph',
                             'w3': 'resource_graph'}},
         ["rolling_source differs between hosts ('resource_graph' on w0, w1, w2 and 1 more; not set on d0, d1)"]),
        ({'rolling_group_settings': {'w0': {'web': {'max_unavailable': 2}}, 'w1': {'web': {'max_unavailable': 2}},
                                     'w2': {'web': {'max_unavailable': 2}}, 'w3': {'web': {'max_unavailable': 2}},
                                     'd0': {'db': {}}, 'd1': {'db': {}}}},
         ["rolling_group_settings differs between hosts ({'web': {'max_unavailable': 2}} on w0, w1, w2 and 1 more; "
          "{'db': {}} on d0, d1)"]),
        ({'rolling_approve': {'w0': True, 'd1': False}, 'rolling_settle_seconds': {'d0': 'x' * 80}},
         ["rolling_approve differs between hosts (True on w0; not set on w1, w2, w3 and 1 more; False on d1)",
          "rolling_settle_seconds differs between hosts (not set on w0, w1, w2 and 2 more; '%s... on d0)"
          % ('x' * 56)]),
    ])
    def test_a_run_wide_variable_must_be_the_same_on_every_host(self, run_variables, expected):
        problems = build_setup(['web', 'db'], INVENTORY, PLAY_HOSTS, run_variables=run_variables)['problems']
        assert [problem.split('; it applies')[0] for problem in problems] == expected
        for problem in problems:
            assert problem.endswith('set it once for every host, for example with -e or in group_vars/all')

    def test_a_known_vm_name_is_kept(self):
        setup = build_setup(['web'], INVENTORY, PLAY_HOSTS, host_overrides={'w0': {'resource_name': 'web_0'}})
        assert setup['hosts']['w0']['resource_name'] == 'web_0'
        assert 'resource_name' not in setup['hosts']['w1']


def _state(**events):
    return {'events': events, 'hosts': {}}


def _record(event_id, state, outcome=None, **times):
    record = {'event_id': event_id, 'event_type': 'Freeze', 'event_source': 'Platform', 'hosts': ['w0'],
              'state': state, 'outcome': outcome, 'outcome_reason': '', 'status_when_seen': 'Scheduled',
              'times': dict((name, None) for name in MILESTONES)}
    record['times'].update(times)
    return record


class TestReport:
    def test_times_durations_and_timeline(self):
        state = _state(a=_record('A', 'gone', 'approved', seen=NOW + 1, drain_started=NOW + 1.5, drained=NOW + 3,
                                 approved=NOW + 3.5, started=NOW + 4, impact_over=NOW + 10, verified=NOW + 11,
                                 undrained=NOW + 11.5, gone=NOW + 19),
                       h=_record('H', 'done', 'started_without_notice', seen=NOW + 12, started=NOW + 12,
                                 impact_over=NOW + 15, verified=NOW + 17, undrained=NOW + 17.2))
        report = build_report(state, {'started': NOW, 'finished': NOW + 20, 'stop_reason': 'done'})
        assert report['run']['wall_seconds'] == 20
        assert report['run']['approved'] == ['A']
        assert report['run']['outcomes'] == {'approved': 1, 'started_without_notice': 1}
        assert report['run']['failed'] is False
        assert report['run']['summary'] == ('succeeded: 2 event(s): 1 started without notice (undrained, nothing could '
                                            'be done), 1 prepared and approved')
        first, second = report['events']
        assert first['event_id'] == 'A'
        assert first['times']['approved'] == '2023-11-14T22:13:23.500Z'
        assert first['durations'] == {'notice': 3.0, 'detection_to_approval': 2.5, 'drain': 1.5,
                                      'approval_to_start': 0.5, 'impact': 6.0, 'verify': 1.0, 'total': 10.5}
        phases = dict((segment['phase'], segment) for segment in first['timeline'])
        assert phases['impact'] == {'phase': 'impact', 'left': 20.0, 'width': 30.0, 'seconds': 6.0}
        assert [segment['phase'] for segment in second['timeline']] == ['impact', 'verify', 'undrain']
        assert second['times']['drained'] is None
        assert [tick['label'] for tick in report['ticks']] == ['0s', '2s', '4s', '6s', '8s', '10s', '12s', '14s',
                                                               '16s', '18s', '20s']

    @pytest.mark.parametrize('state, outcome', [
        ('in_impact', 'started_undrained'), ('pending', None), ('awaiting_start', None)])
    def test_summary_and_failure_follow_the_worst_outcome(self, state, outcome):
        report = build_report(_state(a=_record('A', 'gone', 'approved'), b=_record('B', state, outcome)), {})
        assert report['run']['failed'] is True
        assert report['run']['summary'].startswith('FAILED: 2 event(s): 1 ')
        assert report['run']['worst_outcome'] == (outcome or 'in_progress')

    def test_check_mode_gives_no_verdict(self):
        report = build_report(_state(a=_record('A', 'pending', None)), {'check_mode': True})
        assert report['run']['summary'] == 'planned: 1 event(s): 1 still in progress when the run ended'

    def test_over_budget_events_say_they_will_start_undrained(self):
        record = _record('B', 'over_budget')
        report = build_report(_state(b=record), {})
        assert report['events'][0]['outcome_label'] == 'will start undrained at NotBefore'
        record['over_budget_choice'] = 'leave'
        assert build_report(_state(b=record), {})['run']['failed'] is False


def test_event_row_is_fixed_width():
    from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._rolling import event_row
    row = event_row({'event_status': 'Scheduled', 'event_type': 'Freeze', 'event_source': 'Platform',
                     'not_before': '2022-04-11T22:26:58Z', 'duration_in_seconds': 5, 'leader': 'WestNO_0',
                     'event_id': 'C7061BAC-AFDC-4513-B24B-AA5F13A16123'})
    assert row == 'Scheduled  Freeze     Platform  2022-04-11T22:26:58Z  5s        WestNO_0          ' \
                  'C7061BAC-AFDC-4513-B24B-AA5F13A16123'
    started = event_row({'event_status': 'Started', 'duration_in_seconds': -1})
    assert started.split()[:5] == ['Started', '?', '-', '(started)', '?']
    # A NotBefore that could not be read is shown as IMDS gave it, not as "(started)"; a long leader whole.
    unread = event_row({'event_status': 'Scheduled', 'not_before': None, 'not_before_raw': 'soon',
                        'leader': 'averyveryveryverylongscalesetname_12', 'event_id': 'E'})
    assert unread.split() == ['Scheduled', '?', '-', 'soon', '?', 'averyveryveryverylongscalesetname_12', 'E']
