# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""rolling_fleet_watch: the fleet plane's rounds that need no host, made on the controller.

The watch runs the real planner (rolling_fleet_reconcile) on what a fake
Resource Graph answers, under a clock the test drives; the loop itself
(watch_fleet) and the stop rule (stop_reason) are also tested alone.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.azure_maintenance.scheduled_events.plugins.action.rolling_fleet_watch import fleet_reader, run_watch
from ansible_collections.azure_maintenance.scheduled_events.plugins.filter.rolling import rolling_setup
from ansible_collections.azure_maintenance.scheduled_events.plugins.filter.rolling_fleet import (
    rolling_fleet_reconcile,
    rolling_fleet_setup,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_arm import ArmClient, ArmError
from ansible_collections.azure_maintenance.scheduled_events.plugins.modules import rolling_fleet_watch
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._rolling import (
    CHECK_MODE_STOP,
    stop_reason,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._rolling_fleet import (
    needs_the_hosts,
    watch_fleet,
)

T0 = 1700000000.0
SUB = '8d10da13-8125-4ba9-a717-bf7490507b3d'
PREFIX = '/subscriptions/%s/resourceGroups/rg-web/providers/Microsoft.Compute/virtualMachines/' % SUB
HOSTVARS = dict(('host-%d' % index, {'name': 'web_%d' % index, 'id': PREFIX + 'web_%d' % index})
                for index in range(4))
INVENTORY = {'all': sorted(HOSTVARS), 'web': sorted(HOSTVARS), 'ungrouped': []}
OPTIONS = {'poll_interval_seconds': 5, 'time_budget_seconds': 600, 'settle_seconds': 30, 'max_rounds': 1000,
           'drain_lead_seconds': 10 ** 9}
EVENT = 'AAAAAAAA-0000-4000-8000-000000000001'


class Clock(object):
    """The test's clock: sleeping moves it, nothing else does."""

    def __init__(self):
        self.now = T0
        self.sleeps = []

    def time(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


class FakeGraph(object):
    """Resource Graph whose rows come from ``schedule``: ``[(first read that shows them, event rows[, last read])]``."""

    def __init__(self, schedule=(), fail_reads=()):
        self.schedule = list(schedule)
        self.fail_reads = set(fail_reads)
        self.reads = 0
        self.throttled_waits = 0

    def renew(self):
        return None

    def monotonic(self):
        return 0.0

    def wait(self, seconds, why):
        return None

    def pause(self, seconds):
        raise AssertionError('no read here waits')

    def post(self, path, api_version, payload):
        assert path.endswith('/resources'), 'the watch only reads'
        self.reads += 1
        if self.reads in self.fail_reads:
            raise ArmError('Resource Graph answered 503', status=503)
        rows = []
        for entry in self.schedule:
            first_read, event_rows = entry[:2]
            last_read = entry[2] if len(entry) > 2 else self.reads
            if first_read <= self.reads <= last_read:
                rows.extend(event_rows)
        return {'data': rows}, {}


def freeze_rows(event_id, vms, status='Scheduled'):
    return [{'id': PREFIX + vm + '/providers/Microsoft.Maintenance/scheduledevents/' + event_id, 'name': event_id,
             'subscriptionId': SUB, 'resourceGroup': 'rg-web',
             'properties': {'EventId': event_id, 'EventType': 'Freeze', 'EventStatus': status,
                            'ResourceType': 'VirtualMachine', 'Resources': list(vms), 'EventSource': 'Platform',
                            'DurationInSeconds': 5, 'NotBefore': 'Tue, 14 Nov 2023 23:13:20 GMT'}}
            for vm in vms]


def watch_params(state=None, results=None, **options):
    setup = rolling_setup(['web'], INVENTORY, INVENTORY['all'], group_settings={'web': {'max_unavailable': 2}},
                          hostvars=HOSTVARS)
    args = {'state': state, 'setup': setup, 'fleet': rolling_fleet_setup(setup, HOSTVARS),
            'options': dict(OPTIONS, **options), 'results': results, 'started_at': T0,
            'management_endpoint': 'https://arm.invalid', 'bearer_token': 'token'}
    outcome = ArgumentSpecValidator(rolling_fleet_watch.module_argument_spec()).validate(args)
    assert not outcome.error_messages, outcome.error_messages
    return outcome.validated_parameters


def watch(graph, clock, check_mode=False, graph_client=None, **params):
    return run_watch(watch_params(**params), check_mode, client=graph_client or graph, clock=clock.time,
                     sleep=clock.sleep)


def test_quiet_rounds_stay_in_the_watch_until_an_event_needs_the_hosts():
    # The first read sees nothing; the event appears at the fifth.
    graph, clock = FakeGraph([(5, freeze_rows(EVENT, ['web_1']))]), Clock()
    outcome = watch(graph, clock)
    assert graph.reads == 5 and outcome['rounds'] == 5 and outcome['stop'] == ''
    # The rounds were poll_interval_seconds apart, by the clock.
    assert clock.sleeps == [5.0] * 4
    plan = outcome['plan']
    assert plan['state']['rounds'] == 5 and plan['actions']['drain'] == ['host-1']
    assert plan['participants'] == ['host-1'] and outcome['changed'] is False


def test_every_read_of_a_long_watch_gets_the_whole_timeout():
    # The real ARM client, whose deadline is set when it is made: the watch
    # reads for longer than its timeout (30 s) before the event appears.
    clock = Clock()
    answered = []

    def send(url, body, headers, timeout):
        answered.append(timeout)
        rows = freeze_rows(EVENT, ['web_1']) if len(answered) >= 12 else []
        return 200, {}, json.dumps({'data': rows}).encode('utf-8')
    client = ArmClient('https://arm.invalid', lambda: 'token', timeout=30, send=send, sleep=clock.sleep,
                       monotonic=clock.time)
    outcome = watch(FakeGraph(), clock, graph_client=client, settle_seconds=600)
    assert outcome['rounds'] == 12 and outcome['plan']['actions']['drain'] == ['host-1']
    assert clock.now - T0 > 30 and min(answered) == 30.0


def test_a_watch_round_is_the_filters_round():
    # The watch plans on arguments made plain once; the filter converts its
    # own every call. Same read, same clock: the same plan.
    schedule = [(1, freeze_rows(EVENT, ['web_1']))]
    params, clock = watch_params(), Clock()
    outcome = run_watch(params, False, client=FakeGraph(schedule), clock=clock.time, sleep=clock.sleep)
    read = fleet_reader(params, FakeGraph(schedule))()
    by_filter = rolling_fleet_reconcile(None, params['setup'], params['fleet'], params['options'], read=read,
                                        results={}, now=T0)
    assert outcome['rounds'] == 1 and outcome['plan'] == by_filter


def test_a_setup_that_is_not_rolling_setups_result_fails_clearly():
    params = watch_params()
    params['setup'] = {'hosts': {}}
    clock = Clock()
    outcome = run_watch(params, False, client=FakeGraph([]), clock=clock.time, sleep=clock.sleep)
    assert outcome['failed'] and 'setup must be the result of the rolling_setup filter' in outcome['msg']


def test_the_state_carries_over_and_the_hosts_results_feed_the_first_round_only():
    graph, clock = FakeGraph([(1, freeze_rows(EVENT, ['web_1']))]), Clock()
    first = watch(graph, clock)['plan']
    assert first['actions']['drain'] == ['host-1']
    # The drain was reported; the next round approves (the event now needs an acknowledgement).
    second = watch(FakeGraph([(1, freeze_rows(EVENT, ['web_1']))]), clock, state=first['state'],
                   results={'drain': {'host-1': ''}})
    assert second['rounds'] == 1 and second['plan']['state']['rounds'] == 2
    assert second['plan']['actions']['approve'] == {'host-1': [EVENT]}


def test_an_approved_event_that_runs_keeps_the_watch_on_the_controller_until_it_is_over():
    # Over the fleet plane a host under a Started event is unseen until Resource
    # Graph says Completed: those rounds need no host, the one after them verifies.
    clock = Clock()
    drained = watch(FakeGraph([(1, freeze_rows(EVENT, ['web_1']))]), clock)['plan']
    approving = watch(FakeGraph([(1, freeze_rows(EVENT, ['web_1']))]), clock, state=drained['state'],
                      results={'drain': {'host-1': ''}})['plan']
    params = watch_params()
    approved = rolling_fleet_reconcile(approving['state'], params['setup'], params['fleet'], params['options'],
                                       plan=approving, ack={'approved': [EVENT]}, now=clock.time())
    # Started for reads 1-3, Completed from read 4 on.
    graph = FakeGraph([(1, freeze_rows(EVENT, ['web_1'], 'Started'), 3),
                       (4, freeze_rows(EVENT, ['web_1'], 'Completed'))])
    started = watch(graph, clock, state=approved['state'])
    assert started['rounds'] == 1 and any('started' in message.lower() for message in started['plan']['messages'])
    assert started['plan']['unknown'] == ['host-1']
    over = watch(graph, clock, state=started['plan']['state'])
    # Reads 2 and 3 (Started, nothing to do) stayed here; read 4 (Completed) asks host-1 to verify.
    assert over['rounds'] == 3, over['plan']['messages']
    assert over['plan']['actions']['verify'] == ['host-1']


def test_a_failed_read_is_a_round_that_saw_no_host_and_goes_back_to_the_playbook():
    graph, clock = FakeGraph(fail_reads={2}), Clock()
    outcome = watch(graph, clock)
    assert outcome['rounds'] == 2 and not outcome.get('failed')
    assert outcome['plan']['unknown'] == sorted(HOSTVARS)
    assert any('503' in warning for warning in outcome['plan']['warnings']), outcome['plan']['warnings']


@pytest.mark.parametrize('options, rounds, stop', [
    ({'max_rounds': 3}, 3, 'stopped after 3 rounds (rolling_max_rounds)'),
    ({'settle_seconds': 12}, 4, 'nothing pending for 12 s'),
    ({'time_budget_seconds': 20, 'settle_seconds': 10 ** 6}, 5, 'time budget of 20 s spent'),
])
def test_nothing_to_do_ends_the_watch_when_the_run_would_stop(options, rounds, stop):
    graph, clock = FakeGraph(), Clock()
    outcome = watch(graph, clock, **options)
    assert (outcome['rounds'], outcome['stop']) == (rounds, stop)
    assert graph.reads == rounds


def test_check_mode_makes_one_round():
    graph, clock = FakeGraph(), Clock()
    outcome = watch(graph, clock, check_mode=True)
    assert (graph.reads, outcome['rounds'], outcome['stop']) == (1, 1, CHECK_MODE_STOP)
    assert clock.sleeps == []


def test_a_round_slower_than_the_poll_interval_is_followed_at_once():
    plans = iter([{'now': T0, 'state': {}}, {'now': T0 + 1, 'state': {}, 'messages': ['seen']}])
    clock = Clock()
    clock.now = T0 + 7  # the read and the planner took 7 s, more than the 5 s interval

    def plan_round(state, read, results):
        return next(plans)
    outcome = watch_fleet(None, {}, lambda: {}, plan_round, lambda plan: '', 5, clock.time, clock.sleep)
    assert outcome['rounds'] == 2 and clock.sleeps == []


@pytest.mark.parametrize('plan, needed', [
    ({'participants': [], 'actions': {'approve': {}}, 'messages': [], 'warnings': [], 'unknown': []}, False),
    ({'participants': ['h'], 'actions': {}}, True),
    ({'participants': [], 'actions': {'approve': {'h': ['E']}}}, True),
    ({'messages': ['E seen']}, True),
    ({'warnings': ['E will start undrained']}, True),
    # Unseen hosts alone (under a Started event, over the fleet plane) need no host task.
    ({'unknown': ['h'], 'participants': [], 'actions': {}, 'messages': [], 'warnings': []}, False),
])
def test_needs_the_hosts(plan, needed):
    assert needs_the_hosts(plan) is needed


@pytest.mark.parametrize('now, settled, last_change, rounds, check_mode, expected', [
    (T0 + 1, False, None, 1, True, CHECK_MODE_STOP),
    (T0 + 600, False, None, 1, False, 'time budget of 600 s spent'),
    (T0 + 599, True, T0 + 569, 1, False, 'nothing pending for 30 s'),
    (T0 + 599, True, T0 + 570, 1, False, ''),
    (T0 + 31, True, None, 1, False, 'nothing pending for 30 s'),
    (T0 + 10, False, None, 1000, False, 'stopped after 1000 rounds (rolling_max_rounds)'),
    (T0 + 10, False, None, 999, False, ''),
])
def test_stop_reason(now, settled, last_change, rounds, check_mode, expected):
    plan = {'now': now, 'settled': settled, 'state': {'last_change': last_change, 'rounds': rounds}}
    assert stop_reason(plan, OPTIONS, T0, check_mode) == expected


def test_stop_reason_reads_settings_given_as_strings():
    # Before ansible-core 2.19, templated settings arrive as strings.
    options = {'time_budget_seconds': '600', 'settle_seconds': '30', 'max_rounds': '2'}
    plan = {'now': T0 + 1, 'settled': False, 'state': {'rounds': 2}}
    assert stop_reason(plan, options, str(T0)) == 'stopped after 2 rounds (rolling_max_rounds)'
