# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the affecting, leader_of and fleet_events filters.

``fixtures/fleet_results.json`` holds registered scheduled_events_info results
of five inventory hosts: web-a (VM WestNO_0), web-b (WestNO_1, which read its
document later, once the Freeze had Started), web-c (WestNO_2), db-1 (failed)
and db-2 (skipped). Inventory names differ from VM names on purpose.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.azure_maintenance.scheduled_events.plugins.filter.scheduled_events import (
    FilterModule,
    affecting,
    fleet_events,
    leader_of,
)

HERE = os.path.dirname(__file__)
FREEZE = '11111111-1111-4111-8111-111111111111'
REBOOT = '22222222-2222-4222-8222-222222222222'
REDEPLOY = '33333333-3333-4333-8333-333333333333'
PREEMPT = '44444444-4444-4444-8444-444444444444'
TERMINATE = '55555555-5555-4555-8555-555555555555'


def load_json(*parts):
    with open(os.path.join(HERE, *parts)) as handle:
        return json.load(handle)


@pytest.fixture
def results():
    return load_json('fixtures', 'fleet_results.json')


@pytest.fixture
def raw_document():
    return load_json('..', 'modules', 'fixtures', 'info', 'mixed_types.json')


def test_filter_module_exposes_every_filter():
    assert sorted(FilterModule().filters()) == ['affecting', 'fleet_events', 'leader_of']


class TestAffecting(object):

    def test_normalized_events(self, results):
        events = results['web-a']['events']
        assert [event['event_id'] for event in affecting(events, 'WestNO_1')] == [FREEZE, REBOOT]

    def test_names_compare_without_case(self, results):
        selected = affecting(results['web-a']['events'], 'WESTNO_0')
        assert [event['event_id'] for event in selected] == [FREEZE, REDEPLOY, TERMINATE]

    def test_whole_result_and_raw_document(self, results, raw_document):
        assert affecting(results['web-a'], 'WestNO_3')[0]['event_id'] == PREEMPT
        raw_selected = affecting(raw_document, 'WestNO_2')
        assert [event['EventId'] for event in raw_selected] == [REDEPLOY]
        # Raw events come back raw: the filter selects, it does not convert.
        assert 'Resources' in raw_selected[0]

    def test_raw_events_list(self, raw_document):
        assert len(affecting(raw_document['Events'], 'westno_0')) == 3

    def test_a_raw_2017_03_01_document_names_vms_with_an_underscore(self):
        # That api-version put an underscore before every name; the VM is still WestNO_0.
        raw = {'DocumentIncarnation': 1, 'Events': [{'EventId': FREEZE, 'Resources': ['_WestNO_0', '_WestNO_1']}]}
        assert [event['EventId'] for event in affecting(raw, 'WestNO_0')] == [FREEZE]
        assert leader_of(raw['Events'][0]) == 'WestNO_0'

    def test_nothing_affects_an_unknown_vm(self, results):
        assert affecting(results['web-a']['events'], 'Elsewhere_9') == []

    def test_empty_inputs(self):
        assert affecting([], 'WestNO_0') == []
        assert affecting({'DocumentIncarnation': 1, 'Events': []}, 'WestNO_0') == []

    @pytest.mark.parametrize('name', ['', None, 3, ['WestNO_0']])
    def test_bad_resource_name(self, results, name):
        with pytest.raises(AnsibleFilterError) as caught:
            affecting(results['web-a']['events'], name)
        assert 'resource_name' in str(caught.value)

    @pytest.mark.parametrize('value, expected', [
        ('text', 'expects a list of events, got str'),
        ({'foo': 1}, 'dictionary without events (keys: foo)'),
        ([1, 2], 'item 0 is int'),
    ])
    def test_bad_input(self, value, expected):
        with pytest.raises(AnsibleFilterError) as caught:
            affecting(value, 'WestNO_0')
        assert expected in str(caught.value)


class TestLeaderOf(object):

    def test_first_resource_of_a_normalized_event(self, results):
        events = dict((event['event_id'], event) for event in results['web-a']['events'])
        assert leader_of(events[FREEZE]) == 'WestNO_0'
        assert leader_of(events[REDEPLOY]) == 'WestNO_2'

    def test_raw_event(self, raw_document):
        assert leader_of(raw_document['Events'][1]) == 'WestNO_1'

    def test_no_resources(self):
        assert leader_of({'event_id': FREEZE, 'resources': []}) is None
        assert leader_of({'EventId': FREEZE}) is None

    def test_a_list_points_to_map(self, results):
        with pytest.raises(AnsibleFilterError) as caught:
            leader_of(results['web-a']['events'])
        assert "map('azure_maintenance.scheduled_events.leader_of')" in str(caught.value)

    def test_not_an_event(self):
        with pytest.raises(AnsibleFilterError) as caught:
            leader_of('WestNO_0')
        assert 'expects an event' in str(caught.value)


class TestFleetEvents(object):

    def test_each_event_once_with_the_inventory_hosts_it_affects(self, results):
        fleet = fleet_events(results)
        assert [event['event_id'] for event in fleet] == [FREEZE, REBOOT, REDEPLOY, PREEMPT, TERMINATE]
        by_id = dict((event['event_id'], event) for event in fleet)
        assert by_id[FREEZE]['hosts'] == ['web-a', 'web-b']
        assert by_id[REBOOT]['hosts'] == ['web-b']
        # Resources order: WestNO_2 (web-c) is listed before WestNO_0 (web-a).
        assert by_id[REDEPLOY]['hosts'] == ['web-c', 'web-a']
        assert by_id[PREEMPT]['hosts'] == []
        assert by_id[TERMINATE]['hosts'] == ['web-a']

    def test_leader_host_and_unmatched_resources(self, results):
        by_id = dict((event['event_id'], event) for event in fleet_events(results))
        assert by_id[FREEZE]['leader'] == 'WestNO_0' and by_id[FREEZE]['leader_host'] == 'web-a'
        assert by_id[REDEPLOY]['leader_host'] == 'web-c'
        assert by_id[PREEMPT]['leader'] == 'WestNO_3' and by_id[PREEMPT]['leader_host'] is None
        assert by_id[PREEMPT]['unmatched_resources'] == ['WestNO_3']
        assert by_id[FREEZE]['unmatched_resources'] == []
        # Case differs between Resources ('westno_0') and the reported name ('WestNO_0').
        assert by_id[TERMINATE]['leader_host'] == 'web-a'

    def test_seen_by_every_host_that_read_it(self, results):
        by_id = dict((event['event_id'], event) for event in fleet_events(results))
        assert by_id[PREEMPT]['seen_by'] == ['web-a', 'web-b', 'web-c']

    def test_the_status_furthest_along_wins(self, results):
        by_id = dict((event['event_id'], event) for event in fleet_events(results))
        assert by_id[FREEZE]['event_status'] == 'Started'
        assert by_id[FREEZE]['not_before'] is None

    def test_per_host_annotations_are_replaced(self, results):
        for event in fleet_events(results):
            assert 'affects_this_vm' not in event and 'is_leader' not in event
            assert 'seconds_until_not_before' not in event
            assert event['event_type'] and event['resource_type'] == 'VirtualMachine'

    def test_failed_and_skipped_hosts_are_left_out(self, results):
        seen = set()
        for event in fleet_events(results):
            seen.update(event['seen_by'])
        assert seen == set(['web-a', 'web-b', 'web-c'])

    def test_mapping_goes_through_resource_name_not_inventory_name(self, results):
        renamed = {'WestNO_1': results['web-a'], 'WestNO_0': results['web-b']}
        by_id = dict((event['event_id'], event) for event in fleet_events(renamed))
        # The host called WestNO_1 is the VM WestNO_0, so it leads the Freeze.
        assert by_id[FREEZE]['leader_host'] == 'WestNO_1'
        assert by_id[REBOOT]['hosts'] == ['WestNO_0']

    def test_hostvars_with_result_key_and_hosts(self, results):
        hostvars = dict((host, {'maintenance': result, 'ansible_host': '10.0.0.%d' % index})
                        for index, (host, result) in enumerate(sorted(results.items())))
        hostvars['unrelated'] = {'ansible_host': '10.0.0.99'}
        fleet = fleet_events(hostvars, result_key='maintenance', hosts=['web-c', 'web-b', 'not-in-inventory'])
        by_id = dict((event['event_id'], event) for event in fleet)
        assert [event['event_id'] for event in fleet] == [FREEZE, REBOOT, REDEPLOY, PREEMPT, TERMINATE]
        assert by_id[FREEZE]['seen_by'] == ['web-c', 'web-b']
        assert by_id[FREEZE]['hosts'] == ['web-b'] and by_id[FREEZE]['unmatched_resources'] == ['WestNO_0']
        assert by_id[FREEZE]['leader_host'] is None

    def test_two_inventory_aliases_of_one_vm(self, results):
        per_host = {'web-a': results['web-a'], 'web-a-alias': copy.deepcopy(results['web-a'])}
        by_id = dict((event['event_id'], event) for event in fleet_events(per_host))
        assert by_id[FREEZE]['hosts'] == ['web-a', 'web-a-alias']
        assert by_id[FREEZE]['leader_host'] == 'web-a'

    def test_event_ids_match_without_case(self, results):
        lower = copy.deepcopy(results['web-b'])
        for event in lower['events']:
            event['event_id'] = event['event_id'].lower()
        fleet = fleet_events({'web-a': results['web-a'], 'web-b': lower})
        assert len(fleet) == 5

    def test_events_without_id_are_merged_by_content(self):
        event = {'event_id': None, 'event_type': 'Reboot', 'event_status': 'Scheduled', 'resources': ['A', 'B'],
                 'not_before_raw': 'Mon, 11 Apr 2022 22:26:58 GMT'}
        per_host = {'a': {'resource_name': 'A', 'events': [event]}, 'b': {'resource_name': 'B', 'events': [event]}}
        fleet = fleet_events(per_host)
        assert len(fleet) == 1 and fleet[0]['hosts'] == ['a', 'b']

    def test_an_event_without_id_is_one_event_before_and_after_it_starts(self):
        scheduled = {'event_id': None, 'event_type': 'Reboot', 'event_status': 'Scheduled', 'resources': ['A', 'B'],
                     'not_before_raw': 'Mon, 11 Apr 2022 22:26:58 GMT'}
        started = dict(scheduled, event_status='Started', not_before_raw='')
        fleet = fleet_events({'a': {'resource_name': 'A', 'events': [scheduled]},
                              'b': {'resource_name': 'B', 'events': [started]}})
        assert len(fleet) == 1 and fleet[0]['event_status'] == 'Started' and fleet[0]['seen_by'] == ['a', 'b']

    def test_fields_an_older_api_version_leaves_out_come_from_another_hosts_copy(self):
        # 2017-03-01 gives no EventSource, Description or DurationInSeconds:
        # a User event must still be found as one in the merged list.
        old = {'event_id': FREEZE, 'event_type': 'Reboot', 'event_status': 'Scheduled', 'resources': ['A', 'B'],
               'event_source': None, 'description': None, 'duration_in_seconds': None}
        new = dict(old, event_source='User', description='restart', duration_in_seconds=-1)
        for first, second in ((old, new), (dict(old, event_status='Started'), new)):
            fleet = fleet_events({'a': {'resource_name': 'A', 'events': [first]},
                                  'b': {'resource_name': 'B', 'events': [second]}})
            assert len(fleet) == 1 and fleet[0]['event_source'] == 'User'
            assert fleet[0]['description'] == 'restart' and fleet[0]['duration_in_seconds'] == -1
            assert fleet[0]['event_status'] == first['event_status']

    def test_empty(self):
        assert fleet_events({}) == []
        assert fleet_events({'a': {'resource_name': 'A', 'events': []}}) == []

    @pytest.mark.parametrize('per_host, kwargs, expected', [
        ([], {}, 'expects a dictionary of inventory host name to result'),
        ({'a': 'text'}, {}, 'result for host a is str'),
        ({'a': {'changed': False}}, {}, 'has no resource_name or events'),
        ({'a': {'resource_name': 'A', 'events': 'x'}}, {}, 'events of host a is str'),
        ({'a': {'resource_name': 'A', 'events': [1]}}, {}, 'an event of host a is int'),
        ({'a': 'text'}, {'result_key': 'maintenance'}, 'the input must be hostvars'),
        ({'a': {}}, {'hosts': 'a'}, 'hosts must be a list'),
    ])
    def test_bad_input(self, per_host, kwargs, expected):
        with pytest.raises(AnsibleFilterError) as caught:
            fleet_events(per_host, **kwargs)
        assert expected in str(caught.value)

    def test_a_failed_read_kept_in_the_play_by_failed_when_is_left_out(self, results):
        masked = {'failed': False, 'failed_when_result': False, 'changed': False,
                  'msg': 'IMDS at http://169.254.169.254 did not answer: connection reset'}
        fleet = fleet_events({'web-a': results['web-a'], 'web-b': masked})
        assert fleet and all(event['seen_by'] == ['web-a'] for event in fleet)
        # A result of some other task is still an error, whatever its failed_when.
        with pytest.raises(AnsibleFilterError):
            fleet_events({'web-b': {'changed': False}})

    def test_missing_result_key_means_the_host_did_not_run_the_task(self, results):
        hostvars = {'web-a': {'maintenance': results['web-a']}, 'web-b': {}}
        fleet = fleet_events(hostvars, result_key='maintenance')
        assert all(event['seen_by'] == ['web-a'] for event in fleet)
