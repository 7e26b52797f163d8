# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the scheduled_events lookup.

The lookup is loaded through Ansible's plugin loader, so its options come from
its documentation (and the doc fragments) exactly as in a play; only the HTTP
transport is replaced by a scripted IMDS serving JSON fixtures.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import sys

import pytest

from ansible.errors import AnsibleError
from ansible.plugins.loader import lookup_loader

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils import _se_options
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_transport import HttpResponse
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils import _jmespath_query

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), 'modules', 'fixtures', 'info')
FREEZE_ID = 'C7061BAC-AFDC-4513-B24B-AA5F13A16123'
ENDPOINT = 'http://127.0.0.1:18283/metadata/scheduledevents'


def load_fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return json.load(handle)


def json_response(status, payload):
    return HttpResponse(status, {'content-type': 'application/json'}, json.dumps(payload).encode('utf-8'))


class ScriptedImds(object):
    """Serves one events document and a compute identity; records requests; plays faults first."""

    def __init__(self, document, compute_name='WestNO_0'):
        self.document = document
        self.compute_name = compute_name
        self.faults = []
        self.requests = []

    def request(self, method, url, headers, body=None, connect_timeout=5.0, read_timeout=10.0):
        self.requests.append(url)
        if self.faults:
            return self.faults.pop(0)
        if '/metadata/instance/compute' in url:
            return json_response(200, {'name': self.compute_name})
        return json_response(200, self.document)

    def close(self):
        pass


@pytest.fixture
def lookup():
    plugin = lookup_loader.get('azure_maintenance.scheduled_events.scheduled_events')
    assert plugin is not None, 'the lookup did not load'
    return plugin


@pytest.fixture
def imds():
    return ScriptedImds(load_fixture('mixed_types.json'))


@pytest.fixture
def clients(monkeypatch, lookup, imds):
    """Route the lookup's client to ``imds``; returns the options every client was built from."""
    seen = []

    def client_from_options(options, **kwargs):
        seen.append(dict(options))
        return _se_options.client_from_options(options, transport=imds, sleep=lambda seconds: None, **kwargs)

    monkeypatch.setattr(sys.modules[type(lookup).__module__], 'client_from_options', client_from_options)
    return seen


@pytest.fixture
def warnings(monkeypatch, lookup):
    captured = []
    module = sys.modules[type(lookup).__module__]
    monkeypatch.setattr(module.display, 'warning', lambda message, *args, **kwargs: captured.append(message))
    return captured


class TestResults(object):

    def test_without_query_returns_the_normalized_events(self, lookup, clients, imds):
        events = lookup.run([], endpoint=ENDPOINT)
        assert [event['event_id'][:4] for event in events] == ['1111', '2222', '3333', '4444', '5555']
        first = events[0]
        assert first['event_type'] == 'Freeze' and first['resources'] == ['WestNO_0', 'WestNO_1']
        assert first['affects_this_vm'] is True and first['is_leader'] is True and first['leader'] == 'WestNO_0'
        assert events[1]['affects_this_vm'] is False
        assert 'raw' not in first

    def test_document_is_built_like_the_module_does(self, lookup, clients):
        view = lookup.run(['@'], endpoint=ENDPOINT, resource_name='WestNO_1')
        assert len(view) == 1
        assert sorted(view[0]) == ['document_incarnation', 'events', 'resource_name']
        assert view[0]['document_incarnation'] == 7 and view[0]['resource_name'] == 'WestNO_1'

    def test_query_returning_a_list_is_returned_as_it_is(self, lookup, clients):
        ids = lookup.run([], endpoint=ENDPOINT, query='events[?affects_this_vm].event_id')
        assert [event_id[:4] for event_id in ids] == ['1111', '3333', '5555']

    def test_query_returning_a_scalar_is_wrapped(self, lookup, clients):
        assert lookup.run([], endpoint=ENDPOINT, query='document_incarnation') == [7]
        assert lookup.run([], endpoint=ENDPOINT, query='resource_name') == ['WestNO_0']

    def test_term_is_the_query(self, lookup, clients):
        assert lookup.run(["length(events[?event_status=='Started'])"], endpoint=ENDPOINT) == [2]

    def test_filters(self, lookup, clients):
        events = lookup.run([], endpoint=ENDPOINT, event_types=['reboot', 'Terminate'], event_sources=['User'],
                            event_statuses=['Scheduled'])
        assert [event['event_type'] for event in events] == ['Reboot']

    def test_query_sees_the_filtered_events(self, lookup, clients):
        assert lookup.run([], endpoint=ENDPOINT, event_types=['Freeze'], query='length(events)') == [1]

    def test_resource_name_option_skips_discovery(self, lookup, clients, imds):
        lookup.run([], endpoint=ENDPOINT, resource_name='WestNO_3')
        assert not any('compute' in url for url in imds.requests)


class TestOptions(object):

    def test_options_from_variables(self, lookup, clients, imds):
        variables = {'azure_scheduled_events_endpoint': ENDPOINT, 'azure_scheduled_events_api_version': '2019-08-01',
                     'azure_scheduled_events_timeout': 3, 'azure_scheduled_events_retries': 1,
                     'azure_scheduled_events_deadline': 20}
        assert lookup.run(['resource_name'], variables=variables, resource_name='WestNO_2') == ['WestNO_2']
        assert clients[-1] == {'endpoint': ENDPOINT, 'api_version': '2019-08-01', 'timeout': 3.0, 'retries': 1,
                               'deadline': 20.0, 'resource_name': 'WestNO_2'}
        assert imds.requests == [ENDPOINT + '?api-version=2019-08-01']

    def test_a_managed_hosts_vm_name_is_not_taken_for_the_controllers(self, lookup, clients, monkeypatch):
        # azure_scheduled_events_resource_name names the VM of the host the
        # task runs for (the playbooks and the fleet plane set it per host);
        # the lookup reads the controller's own IMDS.
        variables = {'azure_scheduled_events_endpoint': ENDPOINT, 'azure_scheduled_events_resource_name': 'WestNO_2'}
        lookup.run([], variables=variables)
        assert clients[-1]['resource_name'] is None
        monkeypatch.setenv('AZURE_SCHEDULED_EVENTS_RESOURCE_NAME', 'WestNO_3')
        lookup.run([], variables=variables)
        assert clients[-1]['resource_name'] == 'WestNO_3'

    def test_options_from_environment(self, lookup, clients, monkeypatch):
        monkeypatch.setenv('AZURE_SCHEDULED_EVENTS_ENDPOINT', ENDPOINT)
        monkeypatch.setenv('AZURE_SCHEDULED_EVENTS_TIMEOUT', '2.5')
        lookup.run([])
        assert clients[-1]['endpoint'] == ENDPOINT and clients[-1]['timeout'] == 2.5

    def test_direct_options_win_over_variables(self, lookup, clients):
        lookup.run([], variables={'azure_scheduled_events_endpoint': 'http://127.0.0.1:1/metadata/scheduledevents'},
                   endpoint=ENDPOINT)
        assert clients[-1]['endpoint'] == ENDPOINT

    def test_defaults_are_the_azure_ones(self, lookup, clients):
        lookup.run([])
        assert clients[-1]['endpoint'] == 'http://169.254.169.254/metadata/scheduledevents'
        assert clients[-1]['api_version'] == '2020-07-01'


class TestErrors(object):

    def test_imds_error_becomes_ansible_error_naming_the_controller(self, lookup, clients, imds):
        imds.faults.append(json_response(400, {'error': 'Bad request. Required metadata header not specified'}))
        with pytest.raises(AnsibleError) as caught:
            lookup.run([], endpoint=ENDPOINT)
        message = str(caught.value)
        assert "controller's IMDS" in message and 'HTTP 400' in message and 'proxy' in message

    def test_bad_api_version(self, lookup, clients):
        with pytest.raises(AnsibleError) as caught:
            lookup.run([], endpoint=ENDPOINT, api_version='latest')
        assert 'YYYY-MM-DD' in str(caught.value)

    def test_invalid_query(self, lookup, clients):
        with pytest.raises(AnsibleError) as caught:
            lookup.run([], endpoint=ENDPOINT, query='events[')
        assert 'not a valid JMESPath expression' in str(caught.value)

    def test_term_and_query_together(self, lookup, clients):
        with pytest.raises(AnsibleError) as caught:
            lookup.run(['events'], endpoint=ENDPOINT, query='events')
        assert 'only once' in str(caught.value)

    def test_several_terms(self, lookup, clients):
        with pytest.raises(AnsibleError) as caught:
            lookup.run(['events', 'resource_name'], endpoint=ENDPOINT)
        assert 'at most one term' in str(caught.value)

    def test_missing_jmespath_is_explained(self, lookup, clients, monkeypatch):
        monkeypatch.setattr(_jmespath_query, 'jmespath', None)
        with pytest.raises(AnsibleError) as caught:
            lookup.run([], endpoint=ENDPOINT, query='events')
        assert 'pip install jmespath' in str(caught.value)
        # Without a query jmespath is not needed at all.
        assert len(lookup.run([], endpoint=ENDPOINT)) == 5

    def test_discovery_failure_warns(self, lookup, clients, imds, warnings):
        imds.faults.extend([json_response(200, load_fixture('westno_1.json')), json_response(404, {'error': 'x'})])
        assert lookup.run([], endpoint=ENDPOINT) == []
        assert any('Could not learn this VM' in message for message in warnings)
