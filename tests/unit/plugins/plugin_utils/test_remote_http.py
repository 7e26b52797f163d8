# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the remote-HTTP path (IMDS read through win_uri or uri on the target).

The results fed in are shaped as win_uri and uri document them (win_uri:
status_code, status_description, content, json, content_type and every
response header as a snake_case key; uri: status, content, json, msg, -1
when no answer came). A fake target plays those modules against a scripted
IMDS, and the modules' own run functions run on top of it with simulated
time, so retries, deadlines and waits cost nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible.errors import AnsibleActionFail, AnsibleConnectionFailure

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils import _se_identity
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_client import ImdsClient
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import (
    ImdsHttpError,
    ImdsRedirectError,
    ImdsTimeoutError,
    ImdsUnreachableError,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.modules import (
    scheduled_events_approve,
    scheduled_events_info,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils import _scheduled_events_action
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._remote_http import (
    URI,
    WIN_URI,
    RemoteHttpTransport,
    TargetUnreachableError,
    request_arguments,
    response_from_result,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._scheduled_events_action import (
    choose_path,
    is_local_connection,
    target_host_name,
    validated_params,
)

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), 'modules', 'fixtures')
ENDPOINT = 'http://169.254.169.254/metadata/scheduledevents'
EVENTS_URL = ENDPOINT + '?api-version=2020-07-01'
FREEZE_SHARED = 'C7061BAC-AFDC-4513-B24B-AA5F13A16123'  # Scheduled, Resources [WestNO_0, WestNO_1]
USER_REBOOT = 'F020BA2E-3BC0-4C40-A10B-86575A9EABD5'  # Scheduled, Resources [WestNO_1]
HARDWARE_REBOOT = '5A2B1E3C-0D4F-4E6A-8B9C-1D2E3F4A5B6C'  # Started, Resources [WestNO_0]


def load_fixture(*parts):
    with open(os.path.join(FIXTURES, *parts)) as handle:
        return json.load(handle)


def win_uri_answer(status, payload=None, text=None, **headers):
    """A win_uri result as documented: status_code, status_description, content, json, headers as keys."""
    content = text if text is not None else json.dumps(payload)
    result = {'changed': False, 'elapsed': 0.01, 'url': EVENTS_URL, 'status_code': status,
              'status_description': 'whatever', 'msg': 'whatever', 'content': content,
              'content_length': len(content), 'content_type': 'application/json; charset=utf-8'}
    if payload is not None:
        result['json'] = payload
    result.update(headers)
    return result


def uri_answer(status, payload=None, text=None, **headers):
    """A uri result as documented: status, content, json, msg, lower-case headers with '_'."""
    content = text if text is not None else json.dumps(payload)
    result = {'changed': False, 'elapsed': 0, 'url': EVENTS_URL, 'status': status, 'content': content,
              'msg': 'OK (%d bytes)' % len(content), 'content_type': 'application/json', 'redirected': False}
    if payload is not None:
        result['json'] = payload
    result.update(headers)
    return result


class FakeClock(object):
    """Monotonic time that only moves when slept on (or when a request takes time)."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        assert seconds >= 0
        self.now += seconds


class FakeTarget(object):
    """Plays an HTTP module on a target in front of a scripted IMDS for WestNO_0.

    Events GETs walk through ``documents`` (the last one repeats); approvals
    are recorded and mark their events Started. ``faults`` are played first:
    each a module result to return or an exception to raise. Every run
    advances the clock by ``run_seconds``, as a remote module run takes time.
    """

    def __init__(self, clock, module_name=WIN_URI, documents=None, run_seconds=1.0):
        self.clock = clock
        self.module_name = module_name
        self.documents = [load_fixture('approve', 'two_vm_events.json')] if documents is None else list(documents)
        self.compute = load_fixture('info', 'compute_westno_0.json')
        self.faults = []
        self.runs = []
        self.approved = []
        self.run_seconds = run_seconds

    def answer(self, status, payload=None, **headers):
        make = win_uri_answer if self.module_name == WIN_URI else uri_answer
        return make(status, payload, **headers)

    def __call__(self, module_name, module_args, read_only):
        assert module_name == self.module_name
        self.runs.append({'args': module_args, 'read_only': read_only})
        self.clock.now += self.run_seconds
        if self.faults:
            fault = self.faults.pop(0)
            if isinstance(fault, Exception):
                raise fault
            return fault
        url = module_args['url']
        if '/metadata/instance/compute' in url:
            return self.answer(200, self.compute)
        if module_args['method'] == 'POST':
            ids = [entry['EventId'] for entry in json.loads(module_args['body'])['StartRequests']]
            self.approved.append(ids)
            for document in self.documents:
                for event in document['Events']:
                    if event['EventId'] in ids:
                        event['EventStatus'] = 'Started'
                        event['NotBefore'] = ''
                document['DocumentIncarnation'] += 1
            return self.answer(200, {})
        document = self.documents[0] if len(self.documents) == 1 else self.documents.pop(0)
        return self.answer(200, json.loads(json.dumps(document)))

    def posts(self):
        return [run for run in self.runs if run['args']['method'] == 'POST']


@pytest.fixture
def clock():
    return FakeClock()


def client_for(target, clock, retries=5, timeout=10.0):
    transport = RemoteHttpTransport(target, target.module_name, sender_host_name=lambda: 'winvm7.corp.example')
    return ImdsClient(endpoint=ENDPOINT, transport=transport, retries=retries, timeout=timeout,
                      sleep=clock.sleep, monotonic=clock.monotonic)


def run_module(module_code, target, clock, check_mode=False, **args):
    """Run a module's own code on the 'controller' with requests going through ``target``; return (result, warnings)."""
    params = validated_params(module_code.module_argument_spec(), dict(args, endpoint=ENDPOINT), 'test')
    transport = RemoteHttpTransport(target, target.module_name, sender_host_name=lambda: 'winvm7.corp.example')
    original = _scheduled_events_action.client_from_options

    def timed_client(options, **kwargs):
        return original(options, sleep=clock.sleep, monotonic=clock.monotonic, **kwargs)

    _scheduled_events_action.client_from_options = timed_client
    try:
        result = _scheduled_events_action.run_module_code(module_code, params, check_mode, transport)
    finally:
        _scheduled_events_action.client_from_options = original
    result.setdefault('failed', False)
    return result, list(result.get('warnings') or []), transport


class TestRequestArguments(object):

    @pytest.mark.parametrize('module_name', [WIN_URI, URI])
    def test_get_goes_direct_without_redirects_and_returns_every_answer(self, module_name):
        args = request_arguments(module_name, 'GET', EVENTS_URL, {'Metadata': 'true', 'User-Agent': 'x'},
                                 read_timeout=130.0)
        assert args['url'] == EVENTS_URL
        assert args['method'] == 'GET'
        assert args['headers'] == {'Metadata': 'true', 'User-Agent': 'x'}
        assert args['use_proxy'] is False
        assert args['follow_redirects'] == 'none'
        assert args['return_content'] is True
        assert args['timeout'] == 130
        # Other statuses fail the module but come back with the answer (see TestResponseMapping).
        assert 'status_code' not in args
        assert 'body' not in args

    def test_post_body_is_sent_as_text_and_uri_is_told_not_to_encode_it(self):
        body = b'{"StartRequests": [{"EventId": "A"}]}'
        win = request_arguments(WIN_URI, 'POST', EVENTS_URL, {'Metadata': 'true'}, body, 10.0)
        uri = request_arguments(URI, 'POST', EVENTS_URL, {'Metadata': 'true'}, body, 10.0)
        assert win['body'] == uri['body'] == body.decode('utf-8')
        assert uri['body_format'] == 'raw'
        assert 'body_format' not in win

    def test_fractional_timeouts_round_up_to_whole_seconds(self):
        assert request_arguments(WIN_URI, 'GET', EVENTS_URL, {}, read_timeout=0.2)['timeout'] == 1
        assert request_arguments(URI, 'GET', EVENTS_URL, {}, read_timeout=5.5)['timeout'] == 6

    def test_unknown_module_is_refused(self):
        with pytest.raises(ValueError, match='community.windows.win_uri'):
            request_arguments('community.windows.win_uri', 'GET', EVENTS_URL, {})


class TestResponseMapping(object):

    @pytest.mark.parametrize('make', [win_uri_answer, uri_answer], ids=['win_uri', 'uri'])
    @pytest.mark.parametrize('status', [200, 400, 404, 410, 429, 500])
    def test_status_and_content_become_the_answer(self, make, status):
        module_name = WIN_URI if make is win_uri_answer else URI
        result = make(status, {'DocumentIncarnation': 3, 'Events': []})
        if status != 200:
            result['failed'] = True  # not in the module's status_code: failed, yet the answer is there
        response = response_from_result(module_name, EVENTS_URL, result)
        assert response.status == status
        assert json.loads(response.body.decode('utf-8')) == {'DocumentIncarnation': 3, 'Events': []}

    @pytest.mark.parametrize('status, expected', [('TooManyRequests', 429), ('OK', 200), ('Gone', 410),
                                                  ('InternalServerError', 500), ('404', 404)])
    def test_win_uri_status_by_dotnet_name_or_as_text(self, status, expected):
        assert response_from_result(WIN_URI, EVENTS_URL, win_uri_answer(status, {})).status == expected

    def test_json_without_content_is_encoded_back(self):
        result = win_uri_answer(200, {'DocumentIncarnation': 1, 'Events': []})
        del result['content']
        response = response_from_result(WIN_URI, EVENTS_URL, result)
        assert json.loads(response.body.decode('utf-8')) == {'DocumentIncarnation': 1, 'Events': []}

    def test_non_json_content_is_kept_byte_for_byte(self):
        response = response_from_result(URI, EVENTS_URL, uri_answer(200, text='<html>proxy login</html>'))
        assert response.body == b'<html>proxy login</html>'

    def test_headers_the_core_reads_are_mapped_back(self):
        win = response_from_result(WIN_URI, EVENTS_URL, win_uri_answer(429, {}, retry_after='3'))
        uri = response_from_result(URI, EVENTS_URL, uri_answer(302, {}, location='http://proxy.example/'))
        assert win.headers['retry-after'] == '3'
        assert uri.headers['location'] == 'http://proxy.example/'
        assert win.headers['content-type'].startswith('application/json')

    @pytest.mark.parametrize('module_name, result', [
        (WIN_URI, {'failed': True, 'msg': 'Unhandled exception occurred when sending web request. Exception: '
                                          'The operation has timed out', 'elapsed': 10.0, 'url': EVENTS_URL}),
        (URI, {'failed': True, 'status': -1, 'url': EVENTS_URL,
               'msg': 'Status code was -1 and not [200]: Request failed: <urlopen error timed out>'}),
    ])
    def test_timeouts_raise_the_core_timeout_error(self, module_name, result):
        with pytest.raises(ImdsTimeoutError) as caught:
            response_from_result(module_name, EVENTS_URL, result)
        assert module_name in caught.value.message
        assert caught.value.retryable

    @pytest.mark.parametrize('module_name, result', [
        (WIN_URI, {'failed': True, 'msg': 'Unhandled exception occurred when sending web request. Exception: '
                                          'Unable to connect to the remote server', 'url': EVENTS_URL}),
        (URI, {'failed': True, 'status': -1,
               'msg': 'Status code was -1 and not [200]: Request failed: <urlopen error [Errno 111] Connection refused>'}),
        (WIN_URI, {'failed': True, 'status_code': None, 'msg': 'no response'}),
    ])
    def test_no_answer_raises_unreachable_naming_what_the_module_said(self, module_name, result):
        with pytest.raises(ImdsUnreachableError) as caught:
            response_from_result(module_name, EVENTS_URL, result)
        assert not isinstance(caught.value, (ImdsTimeoutError, TargetUnreachableError))
        assert result['msg'] in caught.value.message

    def test_unreachable_target_is_told_apart(self):
        with pytest.raises(TargetUnreachableError, match='WinRM'):
            response_from_result(WIN_URI, EVENTS_URL, {'unreachable': True, 'msg': 'WinRM: connection refused'})

    def test_skipped_module_is_no_answer(self):
        with pytest.raises(ImdsUnreachableError, match='skipped'):
            response_from_result(URI, EVENTS_URL, {'skipped': True, 'msg': 'remote module does not support check mode'})

    def test_a_result_that_is_no_dict_is_no_answer(self):
        with pytest.raises(ImdsUnreachableError):
            response_from_result(WIN_URI, EVENTS_URL, 'garbage')


class TestThroughTheCoreClient(object):
    """The core's client, unchanged, on the remote transport: retries, deadlines and error answers."""

    def test_server_errors_and_throttling_are_retried_with_retry_after(self, clock):
        target = FakeTarget(clock)
        target.faults = [win_uri_answer(500, {'error': 'boom'}), win_uri_answer(429, {'error': 'slow'}, retry_after='4')]
        client = client_for(target, clock)
        before = clock.now
        normalized, raw = client.get_document()
        assert normalized['document_incarnation'] == 2
        assert len(target.runs) == 3
        # Three runs of one second each, plus the backoffs; the 429 asked for 4 s.
        assert clock.now - before >= 3 + 4

    def test_bad_request_is_not_retried_and_says_what_to_do(self, clock):
        target = FakeTarget(clock)
        target.faults = [win_uri_answer(400, {'error': 'Bad request. Required metadata header not specified'})]
        with pytest.raises(ImdsHttpError) as caught:
            client_for(target, clock).get_document()
        assert caught.value.status == 400
        assert 'Metadata: true' in caught.value.message
        assert len(target.runs) == 1

    def test_redirect_is_reported_as_interception(self, clock):
        target = FakeTarget(clock)
        target.faults = [win_uri_answer(302, {}, location='http://login.example/')]
        with pytest.raises(ImdsRedirectError, match='login.example'):
            client_for(target, clock).get_document()

    def test_retries_end_when_exhausted_with_the_module_message(self, clock):
        target = FakeTarget(clock)
        failure = {'failed': True, 'msg': 'Unhandled exception occurred when sending web request. Exception: '
                                          'Unable to connect to the remote server'}
        target.faults = [dict(failure) for dummy in range(10)]
        with pytest.raises(ImdsUnreachableError) as caught:
            client_for(target, clock, retries=2).get_document()
        assert len(target.runs) == 3
        assert 'after 3 attempts' in caught.value.message
        assert 'Unable to connect to the remote server' in caught.value.message

    def test_timeout_retries_then_succeeds(self, clock):
        target = FakeTarget(clock)
        target.faults = [{'failed': True, 'msg': 'Exception: The operation has timed out'}]
        normalized, dummy = client_for(target, clock).get_document()
        assert normalized['document_incarnation'] == 2
        # The first call gets the long first-call timeout, in whole seconds.
        assert target.runs[0]['args']['timeout'] == 130

    def test_deadline_stops_retrying(self, clock):
        target = FakeTarget(clock, run_seconds=3.0)
        target.faults = [win_uri_answer(503, {'error': 'busy'}) for dummy in range(10)]
        client = client_for(target, clock, retries=10)
        with pytest.raises(ImdsHttpError) as caught:
            client.get_document(deadline=clock.now + 5.0)
        assert caught.value.status == 503
        assert len(target.runs) < 10

    def test_target_connection_failure_is_retryable_and_remembered(self, clock):
        target = FakeTarget(clock)
        target.faults = [AnsibleConnectionFailure('winrm: read timed out')]
        client = client_for(target, clock)
        normalized, dummy = client.get_document()
        assert normalized['document_incarnation'] == 2
        # A later answer clears it: the host is back.
        assert client.transport.target_failure is None

        target.faults = [AnsibleConnectionFailure('winrm: connection refused') for dummy in range(10)]
        with pytest.raises(ImdsUnreachableError, match='winrm: connection refused'):
            client_for(target, clock, retries=1).get_document()

    def test_uri_results_work_the_same(self, clock):
        target = FakeTarget(clock, module_name=URI)
        target.faults = [{'failed': True, 'status': -1, 'msg': 'Request failed: <urlopen error timed out>'}]
        normalized, dummy = client_for(target, clock).get_document()
        assert [event['event_id'] for event in normalized['events']] == [FREEZE_SHARED, USER_REBOOT, HARDWARE_REBOOT]

    def test_gets_are_read_only_and_posts_are_not(self, clock):
        target = FakeTarget(clock)
        client = client_for(target, clock)
        client.get_document()
        client.approve([FREEZE_SHARED])
        assert [run['read_only'] for run in target.runs] == [True, False]


class TestModulesOnTheRemotePath(object):
    """The modules' own code, run as the action plugin runs it."""

    def test_info_result_is_the_module_result(self, clock):
        target = FakeTarget(clock)
        result, warnings, dummy = run_module(scheduled_events_info, target, clock)
        assert result['failed'] is False
        assert result['changed'] is False
        assert result['resource_name'] == 'WestNO_0'
        assert result['resource_name_source'] == 'imds'
        assert [event['event_id'] for event in result['this_vm_events']] == [FREEZE_SHARED, HARDWARE_REBOOT]
        assert result['maintenance_pending'] is True
        assert result['raw']['DocumentIncarnation'] == 2
        assert warnings == []

    def test_info_filters_and_options_flow_through(self, clock):
        target = FakeTarget(clock)
        result, warnings, dummy = run_module(scheduled_events_info, target, clock, event_types=['Reboot'],
                                             event_statuses=['Scheduled'], resource_name='WestNO_1', retries=0,
                                             api_version='2019-08-01', timeout=3)
        assert [event['event_id'] for event in result['events']] == [USER_REBOOT]
        assert result['resource_name_source'] == 'option'
        assert target.runs[0]['args']['url'].endswith('api-version=2019-08-01')
        # No compute request: the name was given.
        assert len(target.runs) == 1

    def test_identity_falls_back_to_the_target_not_the_controller(self, clock, monkeypatch):
        monkeypatch.setattr(_se_identity, 'fallback_resource_name', lambda: 'the-controller')
        target = FakeTarget(clock)
        target.compute = {'no': 'name'}
        result, warnings, dummy = run_module(scheduled_events_info, target, clock)
        assert result['resource_name'] == 'winvm7'
        assert result['resource_name_source'] == 'hostname'
        assert any('winvm7' in warning for warning in warnings)

    def test_info_wait_times_out_on_the_controller_clock(self, clock):
        target = FakeTarget(clock, documents=[{'DocumentIncarnation': 1, 'Events': []}])
        result, warnings, dummy = run_module(scheduled_events_info, target, clock, wait_for='any_event',
                                             wait_timeout=10, poll_interval=2)
        assert result['failed'] is True
        assert 'Timed out waiting for any selected event' in result['msg']
        assert result['document_incarnation'] == 1
        assert 3 <= len(target.runs) <= 12

    def test_info_wait_rides_out_a_target_that_drops_away(self, clock):
        documents = [{'DocumentIncarnation': 1, 'Events': []}, load_fixture('info', 'westno_2.json')]
        target = FakeTarget(clock, documents=documents)
        target.faults = [win_uri_answer(200, {'DocumentIncarnation': 1, 'Events': []}),
                         AnsibleConnectionFailure('winrm: host paused')]
        result, warnings, dummy = run_module(scheduled_events_info, target, clock, resource_name='WestNO_0',
                                             wait_for='this_vm_event', wait_timeout=60)
        assert result['failed'] is False
        assert result['maintenance_pending'] is True

    def test_bad_request_fails_with_the_core_message(self, clock):
        target = FakeTarget(clock)
        target.faults = [win_uri_answer(400, {'error': 'Bad request. api-version is invalid'})]
        result, warnings, transport = run_module(scheduled_events_info, target, clock)
        assert result['failed'] is True
        assert 'set api_version' in result['msg']
        assert transport.target_failure is None

    def test_unreachable_target_is_remembered_for_the_action(self, clock):
        target = FakeTarget(clock)
        target.faults = [AnsibleConnectionFailure('winrm: no route') for dummy in range(10)]
        result, warnings, transport = run_module(scheduled_events_info, target, clock, retries=1)
        assert result['failed'] is True
        assert isinstance(transport.target_failure, TargetUnreachableError)

    def test_approve_leader_approves_once_and_waits(self, clock):
        target = FakeTarget(clock)
        result, warnings, dummy = run_module(scheduled_events_approve, target, clock, event_types=['Freeze'],
                                             leader_only=True, wait='started', wait_timeout=30)
        assert result['failed'] is False
        assert result['changed'] is True
        assert result['approved'] == [FREEZE_SHARED]
        assert target.approved == [[FREEZE_SHARED]]
        assert result['last_statuses'] == {FREEZE_SHARED: 'Started'}
        post = target.posts()[0]['args']
        assert post['headers']['Metadata'] == 'true'
        assert post['headers']['Content-Type'] == 'application/json'

    def test_approve_check_mode_sends_no_post(self, clock):
        target = FakeTarget(clock)
        result, warnings, dummy = run_module(scheduled_events_approve, target, clock, check_mode=True,
                                             event_types=['Freeze'])
        assert result['changed'] is True
        assert result['approved'] == [FREEZE_SHARED]
        assert target.posts() == []
        assert all(run['read_only'] for run in target.runs)

    def test_approve_this_vm_scope_skips_other_vms_events(self, clock):
        target = FakeTarget(clock)
        result, warnings, dummy = run_module(scheduled_events_approve, target, clock, event_ids=[USER_REBOOT])
        assert result['failed'] is False
        assert result['changed'] is False
        assert result['skipped_events'] == [{'event_id': USER_REBOOT, 'reason': 'not_this_vm'}]
        assert target.posts() == []

    def test_approve_refusal_is_a_clear_failure(self, clock):
        target = FakeTarget(clock)
        # The approval is refused; the document read again still has the event, so it is a real error.
        target.faults = [win_uri_answer(200, load_fixture('info', 'compute_westno_0.json')),
                         win_uri_answer(200, load_fixture('approve', 'two_vm_events.json')),
                         win_uri_answer(400, {'error': 'Bad request. Malformed StartRequests'})]
        result, warnings, dummy = run_module(scheduled_events_approve, target, clock, event_ids=[FREEZE_SHARED])
        assert result['failed'] is True
        assert 'HTTP 400' in result['msg']
        assert result['approved'] == []

    def test_approve_validation_happens_before_any_request(self, clock):
        target = FakeTarget(clock)
        result, warnings, dummy = run_module(scheduled_events_approve, target, clock, event_ids=['not-a-guid'])
        assert result['failed'] is True
        assert target.runs == []


class TestActionHelpers(object):

    @pytest.mark.parametrize('shell_family, setting, local, asynchronous, expected', [
        ('powershell', None, False, False, WIN_URI),
        ('powershell', 'auto', False, False, WIN_URI),
        # Windows over SSH with cmd.exe as the default shell.
        ('cmd', None, False, False, WIN_URI),
        ('sh', None, False, False, 'module'),
        ('sh', '', False, False, 'module'),
        ('sh', URI, False, False, URI),
        ('sh', WIN_URI, False, False, WIN_URI),
        ('powershell', URI, False, False, URI),
        # The target is the controller's machine: no module to start.
        ('sh', None, True, False, 'controller'),
        ('sh', 'auto', True, False, 'controller'),
        # async needs the module; so does asking for it.
        ('sh', None, True, True, 'module'),
        ('sh', 'module', True, False, 'module'),
        ('sh', URI, True, False, URI),
    ])
    def test_choose_path(self, shell_family, setting, local, asynchronous, expected):
        assert choose_path(shell_family, setting, local=local, asynchronous=asynchronous) == expected

    def test_choose_path_refuses_unknown_values(self):
        with pytest.raises(AnsibleActionFail, match='scheduled_events_remote_http must be one of auto, module, '):
            choose_path('sh', 'curl')
        # Reading from the controller is never a choice: IMDS is link-local to each VM.
        with pytest.raises(AnsibleActionFail, match='scheduled_events_remote_http must be one of'):
            choose_path('sh', 'controller', local=True)

    @pytest.mark.parametrize('load_name, transport, expected', [
        ('ansible.builtin.local', 'local', True),
        ('local', None, True),
        (None, 'local', True),
        ('ansible.builtin.ssh', 'ssh', False),
        ('ansible.builtin.paramiko_ssh', 'paramiko', False),
    ])
    def test_is_local_connection(self, load_name, transport, expected):
        connection = type('Connection', (object,), {'_load_name': load_name, 'transport': transport})()
        assert is_local_connection(connection) is expected

    def test_params_are_checked_against_the_module_spec(self):
        with pytest.raises(AnsibleActionFail, match='bogus'):
            validated_params(scheduled_events_info.module_argument_spec(), {'bogus': 1}, 'info')
        with pytest.raises(AnsibleActionFail, match='wait'):
            validated_params(scheduled_events_approve.module_argument_spec(), {'wait': 'soon'}, 'approve')
        params = validated_params(scheduled_events_approve.module_argument_spec(), {'timeout': '7'}, 'approve')
        assert params['timeout'] == 7.0
        assert params['scope'] == 'this_vm'

    def test_every_module_option_is_accepted(self):
        # The action reads the module's own spec: nothing to keep in step.
        for module_code in (scheduled_events_info, scheduled_events_approve):
            spec = module_code.module_argument_spec()
            params = validated_params(spec, {}, 'any')
            assert set(params) == set(spec)

    @pytest.mark.parametrize('task_vars, expected', [
        ({'ansible_facts': {'hostname': 'WINVM7'}, 'inventory_hostname': 'winvm7.corp.example'}, 'WINVM7'),
        ({'inventory_hostname': 'winvm7.corp.example'}, 'winvm7'),
        ({}, ''),
    ])
    def test_target_host_name(self, task_vars, expected):
        assert target_host_name(task_vars) == expected


LOCAL_EVENT_ID = 'F1000000-0000-4000-8000-00000000000A'


@pytest.fixture
def imds_server():
    """A one-document IMDS on a port the kernel chooses, recording ``(path, headers)`` of each request."""
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the http.server name)
            self.server.requests.append((self.path, dict(self.headers)))
            status = self.server.status
            body = json.dumps({'DocumentIncarnation': 5, 'Events': [{
                'EventId': LOCAL_EVENT_ID, 'EventStatus': 'Scheduled', 'EventType': 'Freeze',
                'ResourceType': 'VirtualMachine', 'Resources': ['WestNO_0'], 'NotBefore': '',
                'EventSource': 'Platform', 'DurationInSeconds': 5}]} if status == 200
                else {'error': 'Not found'}).encode('utf-8')
            self.send_response(status)
            self.send_header('Content-Type', 'application/json')
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = HTTPServer(('127.0.0.1', 0), Handler)
    server.requests = []
    server.status = 200
    server.endpoint = 'http://127.0.0.1:%d/metadata/scheduledevents' % server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


class TestActionPlugin(object):
    """The action plugin's run(), with Ansible's task and connection replaced by stand-ins."""

    def make_action(self, clock, shell_family='powershell', check_mode=False, installed=True, endpoint=ENDPOINT,
                    local=False, async_val=0, **args):
        from unittest import mock

        from ansible_collections.azure_maintenance.scheduled_events.plugins.action import scheduled_events_info as info_action

        task = mock.MagicMock(args=dict(args, endpoint=endpoint), check_mode=check_mode, async_val=async_val,
                              collections=[], diff=False, no_log=False)
        connection = mock.MagicMock()
        connection._load_name = 'ansible.builtin.local' if local else 'ansible.builtin.ssh'
        connection.has_native_async = False
        connection._shell.SHELL_FAMILY = shell_family
        connection._shell.tmpdir = None
        loader_obj = mock.MagicMock()
        loader_obj.module_loader.find_plugin_with_context.return_value = mock.MagicMock(resolved=installed)
        templar = mock.MagicMock()
        templar.template.side_effect = lambda value: value
        action = info_action.ActionModule(task, connection, mock.MagicMock(), mock.MagicMock(), templar, loader_obj)
        # ansible-core 2.19 ignores the shared_loader_obj argument and keeps its plugin loaders.
        action._shared_loader_obj = loader_obj
        target = FakeTarget(clock)
        calls = []

        def execute_module(module_name=None, module_args=None, task_vars=None, **kwargs):
            calls.append(module_name)
            if module_name == info_action.ActionModule.MODULE:
                return {'changed': False, 'from': 'python module'}
            return target(module_name, module_args, action._read_only_request)

        action._execute_module = execute_module
        action._remove_tmp_path = lambda path: None
        return action, target, calls

    def test_posix_targets_run_the_python_module(self, clock):
        action, target, calls = self.make_action(clock, shell_family='sh')
        result = action.run(task_vars={})
        assert result['from'] == 'python module'
        assert calls == ['azure_maintenance.scheduled_events.scheduled_events_info']

    def test_local_connections_read_in_the_controller(self, clock, imds_server):
        action, target, calls = self.make_action(clock, shell_family='sh', local=True, endpoint=imds_server.endpoint,
                                                 resource_name='WestNO_0')
        result = action.run(task_vars={})
        # No module was started: the worker itself asked IMDS, with the core's headers.
        assert calls == []
        assert not result.get('failed'), result
        assert result['document_incarnation'] == 5
        assert [event['event_id'] for event in result['events']] == [LOCAL_EVENT_ID]
        assert imds_server.requests and all(headers.get('Metadata') == 'true' for _path, headers in imds_server.requests)

    def test_local_connections_can_still_run_the_module(self, clock, imds_server):
        for extra in ({'async_val': 30}, {}):
            action, target, calls = self.make_action(clock, shell_family='sh', local=True,
                                                     endpoint=imds_server.endpoint, **extra)
            task_vars = {} if extra else {'scheduled_events_remote_http': 'module'}
            assert action.run(task_vars=task_vars)['from'] == 'python module'
            assert calls == ['azure_maintenance.scheduled_events.scheduled_events_info']
        assert imds_server.requests == []

    def test_local_read_failures_are_the_modules_failures(self, clock, imds_server):
        imds_server.status = 404
        action, target, calls = self.make_action(clock, shell_family='sh', local=True, endpoint=imds_server.endpoint,
                                                 resource_name='WestNO_0', retries=0)
        result = action.run(task_vars={})
        assert result['failed'] is True
        assert 'HTTP 404' in result['msg']
        assert calls == []

    def test_powershell_targets_read_through_win_uri(self, clock):
        action, target, calls = self.make_action(clock, resource_name='WestNO_0')
        result = action.run(task_vars={})
        assert calls == [WIN_URI]
        assert result['document_incarnation'] == 2
        assert not result.get('failed')

    def test_missing_windows_collection_says_what_to_install(self, clock):
        action, target, calls = self.make_action(clock, installed=False)
        result = action.run(task_vars={})
        assert result['failed'] is True
        assert 'ansible-galaxy collection install ansible.windows' in result['msg']
        assert calls == []

    def test_an_unreachable_host_is_reported_unreachable(self, clock):
        action, target, calls = self.make_action(clock, retries=0, resource_name='WestNO_0')
        target.faults = [AnsibleConnectionFailure('winrm: connection refused')]
        result = action.run(task_vars={})
        assert result['failed'] is True
        assert result['unreachable'] is True
        assert 'winrm: connection refused' in result['msg']

    def test_imds_failures_are_not_unreachable(self, clock):
        action, target, calls = self.make_action(clock, retries=0, resource_name='WestNO_0')
        target.faults = [win_uri_answer(404, {'error': 'Not found'})]
        result = action.run(task_vars={})
        assert result['failed'] is True
        assert 'unreachable' not in result
        assert 'HTTP 404' in result['msg']

    def test_check_mode_reads_with_the_http_module_out_of_check_mode(self, clock):
        action, target, calls = self.make_action(clock, check_mode=True)
        args = {}
        action._read_only_request = True
        action._update_module_args(WIN_URI, args, {})
        assert args['_ansible_check_mode'] is False
        action._read_only_request = False
        action._update_module_args(WIN_URI, args, {})
        assert args['_ansible_check_mode'] is True
