# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the scheduled_events_info module (and the shared _se_info logic it runs).

The module runs for real down to the HTTP transport, which is replaced by a
scripted IMDS that serves JSON fixtures; time is simulated, so waits and
retries cost nothing. Tests assert on the module's JSON output and on the
requests IMDS received.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import contextlib
import json
import os
import time

import pytest

from ansible.module_utils import basic
from ansible.module_utils.common import warnings as module_warnings

try:
    from ansible.module_utils import _internal as module_utils_internal
except ImportError:  # ansible-core before 2.19
    module_utils_internal = None

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils import _se_identity, _se_options
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import (
    ImdsTimeoutError,
    ImdsUnreachableError,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_transport import HttpResponse
from ansible_collections.azure_maintenance.scheduled_events.plugins.modules import scheduled_events_info

FIXTURES = os.path.join(os.path.dirname(__file__), 'fixtures', 'info')
ENDPOINT = 'http://127.0.0.1:18281/metadata/scheduledevents'
FREEZE_ID = 'C7061BAC-AFDC-4513-B24B-AA5F13A16123'


def load_fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return json.load(handle)


def warning_texts(result):
    """Warnings as text, whether ansible-core reports them as text or as structured summaries."""
    return [warning['event']['msg'] if isinstance(warning, dict) else warning for warning in result.get('warnings', [])]


@contextlib.contextmanager
def module_args(args):
    try:
        from ansible.module_utils.testing import patch_module_args
    except ImportError:  # ansible-core before 2.19
        patch_module_args = None
    if patch_module_args is not None:
        with patch_module_args(args):
            yield
        return
    saved = basic._ANSIBLE_ARGS
    basic._ANSIBLE_ARGS = json.dumps({'ANSIBLE_MODULE_ARGS': args}).encode('utf-8')
    try:
        yield
    finally:
        basic._ANSIBLE_ARGS = saved


class FakeClock(object):
    """Monotonic time that only moves when slept on."""

    def __init__(self):
        self.now = 5000.0
        self.sleeps = []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds


def json_response(status, payload, headers=None):
    return HttpResponse(status, dict(headers or {}, **{'content-type': 'application/json'}),
                        json.dumps(payload).encode('utf-8'))


class ScriptedImds(object):
    """A transport playing IMDS for one VM.

    Events GETs walk through ``documents`` (the last one repeats); compute
    GETs answer ``compute``. ``events_faults``/``compute_faults`` are played
    first: each an HttpResponse to return or an exception to raise.
    """

    def __init__(self, documents, compute=None):
        self.documents = list(documents)
        self.compute = compute if compute is not None else load_fixture('compute_westno_0.json')
        self.events_faults = []
        self.compute_faults = []
        self.requests = []

    def request(self, method, url, headers, body=None, connect_timeout=5.0, read_timeout=10.0):
        self.requests.append({'method': method, 'url': url, 'headers': dict(headers), 'read_timeout': read_timeout})
        if '/metadata/instance/compute' in url:
            if self.compute_faults:
                return self._play(self.compute_faults.pop(0))
            return json_response(200, self.compute)
        if self.events_faults:
            return self._play(self.events_faults.pop(0))
        document = self.documents[0] if len(self.documents) == 1 else self.documents.pop(0)
        return json_response(200, document)

    @staticmethod
    def _play(outcome):
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def close(self):
        pass

    def urls(self, fragment):
        return [request for request in self.requests if fragment in request['url']]


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def run(monkeypatch, capsys, clock):
    """Run the module with ``args`` against ``imds``; return the JSON it printed, parsed."""
    def runner(imds, **args):
        def client_from_options(options, **kwargs):
            return _se_options.client_from_options(options, transport=imds, sleep=clock.sleep,
                                                   monotonic=clock.monotonic, **kwargs)

        monkeypatch.setattr(scheduled_events_info, 'client_from_options', client_from_options)
        # Once controller code is imported (other tests load plugins), ansible-core 2.19 sends module
        # warnings to the display instead of the result; a module on a managed node never is the controller.
        if hasattr(module_utils_internal, 'is_controller'):
            monkeypatch.setattr(module_utils_internal, 'is_controller', False)
        if hasattr(module_warnings, '_global_warnings'):
            module_warnings._global_warnings.clear()
        args.setdefault('endpoint', ENDPOINT)
        capsys.readouterr()
        with module_args(args):
            with pytest.raises(SystemExit) as caught:
                scheduled_events_info.main()
        # Only JSON on stdout: a traceback would not parse.
        result = json.loads(capsys.readouterr().out)
        assert (caught.value.code == 1) == bool(result.get('failed'))
        assert 'exception' not in result
        result.setdefault('failed', False)
        return result
    return runner


class TestReading(object):

    def test_westno_document_is_normalized_annotated_and_kept_raw(self, run):
        raw = load_fixture('westno_2.json')
        imds = ScriptedImds([raw])
        result = run(imds)
        assert result['failed'] is False
        assert result['changed'] is False
        assert result['document_incarnation'] == 2
        assert result['resource_name'] == 'WestNO_0'
        assert result['resource_name_source'] == 'imds'
        assert result['raw'] == raw
        event = result['events'][0]
        assert event['event_id'] == FREEZE_ID
        assert event['event_type'] == 'Freeze'
        assert event['event_status'] == 'Scheduled'
        assert event['event_source'] == 'Platform'
        assert event['resource_type'] == 'VirtualMachine'
        assert event['resources'] == ['WestNO_0', 'WestNO_1']
        assert event['not_before'] == '2022-04-11T22:26:58Z'
        assert event['not_before_raw'] == 'Mon, 11 Apr 2022 22:26:58 GMT'
        assert event['duration_in_seconds'] == 5
        assert event['description'].startswith('Virtual machine is being paused')
        assert event['affects_this_vm'] is True
        assert event['leader'] == 'WestNO_0'
        assert event['is_leader'] is True
        expected = calendar.timegm((2022, 4, 11, 22, 26, 58, 0, 0, 0)) - int(time.time())
        assert isinstance(event['seconds_until_not_before'], int)
        assert abs(event['seconds_until_not_before'] - expected) <= 5
        assert result['this_vm_events'] == result['events']
        assert result['maintenance_pending'] is True
        assert 'waited' not in result and 'polls' not in result

    def test_every_request_carries_the_metadata_header_and_api_version(self, run):
        imds = ScriptedImds([load_fixture('westno_1.json')])
        run(imds, api_version='2019-08-01')
        for request in imds.requests:
            assert request['headers']['Metadata'] == 'true'
            assert 'X-Forwarded-For' not in request['headers']
        assert imds.urls('scheduledevents')[0]['url'] == ENDPOINT + '?api-version=2019-08-01'
        assert imds.urls('compute')[0]['url'] == 'http://127.0.0.1:18281/metadata/instance/compute?api-version=2021-02-01'

    def test_events_are_read_before_identity_with_the_first_call_timeout(self, run):
        imds = ScriptedImds([load_fixture('westno_1.json')])
        run(imds, timeout=3)
        assert 'scheduledevents' in imds.requests[0]['url']
        # The first Scheduled Events request may take two minutes while Azure enables them.
        assert imds.requests[0]['read_timeout'] >= 120
        assert imds.requests[1]['read_timeout'] == 3

    def test_empty_document(self, run):
        result = run(ScriptedImds([load_fixture('westno_4.json')]))
        assert result['document_incarnation'] == 4
        assert result['events'] == [] and result['this_vm_events'] == []
        assert result['maintenance_pending'] is False

    def test_started_event_has_no_not_before(self, run):
        result = run(ScriptedImds([load_fixture('westno_3.json')]))
        event = result['events'][0]
        assert event['event_status'] == 'Started'
        assert event['not_before'] is None and event['not_before_raw'] == ''
        assert event['seconds_until_not_before'] is None
        assert result['maintenance_pending'] is True

    def test_events_of_other_vms_are_reported_but_not_pending_here(self, run):
        result = run(ScriptedImds([load_fixture('mixed_types.json')]), resource_name='WestNO_3')
        assert len(result['events']) == 5
        assert [event['event_type'] for event in result['this_vm_events']] == ['Preempt']
        assert result['this_vm_events'][0]['is_leader'] is True
        assert result['maintenance_pending'] is True
        result = run(ScriptedImds([load_fixture('mixed_types.json')]), resource_name='NotInAnyEvent')
        assert result['this_vm_events'] == []
        assert result['maintenance_pending'] is False
        assert all(event['affects_this_vm'] is False and event['is_leader'] is False for event in result['events'])

    def test_resource_names_compare_without_case(self, run):
        result = run(ScriptedImds([load_fixture('mixed_types.json')]), resource_name='westno_0')
        mine = [event['event_type'] for event in result['this_vm_events']]
        assert mine == ['Freeze', 'Redeploy', 'Terminate']
        by_type = dict((event['event_type'], event) for event in result['events'])
        assert by_type['Freeze']['is_leader'] is True
        assert by_type['Redeploy']['is_leader'] is False and by_type['Redeploy']['leader'] == 'WestNO_2'
        assert by_type['Terminate']['is_leader'] is True

    def test_check_mode_reads_the_same(self, run):
        normal = run(ScriptedImds([load_fixture('westno_2.json')]))
        checked = run(ScriptedImds([load_fixture('westno_2.json')]), _ansible_check_mode=True)
        assert checked['changed'] is False
        for key in ('document_incarnation', 'this_vm_events', 'maintenance_pending', 'raw'):
            assert checked[key] == normal[key]


class TestApiVersions(object):

    def test_2017_03_01_resource_names_lose_the_underscore(self, run):
        imds = ScriptedImds([load_fixture('westno_2_api_2017-03-01.json')])
        result = run(imds, api_version='2017-03-01')
        event = result['events'][0]
        assert event['resources'] == ['WestNO_0', 'WestNO_1']
        assert event['affects_this_vm'] is True and event['is_leader'] is True
        assert event['description'] is None
        assert event['event_source'] is None
        assert event['duration_in_seconds'] is None
        assert result['raw']['Events'][0]['Resources'] == ['_WestNO_0', '_WestNO_1']

    def test_2019_04_01_has_description_but_no_source_nor_duration(self, run):
        result = run(ScriptedImds([load_fixture('westno_2_api_2019-04-01.json')]), api_version='2019-04-01')
        event = result['events'][0]
        assert event['description'].startswith('Virtual machine')
        assert event['event_source'] is None and event['duration_in_seconds'] is None

    def test_source_filter_matches_nothing_before_2019_08_01(self, run):
        result = run(ScriptedImds([load_fixture('westno_2_api_2019-04-01.json')]), api_version='2019-04-01',
                     event_sources=['Platform'])
        assert result['events'] == []

    def test_latest_is_refused_with_the_known_versions(self, run):
        imds = ScriptedImds([load_fixture('westno_1.json')])
        result = run(imds, api_version='{latest}')
        assert result['failed'] is True
        assert '2020-07-01' in result['msg'] and 'latest' in result['msg']
        assert imds.requests == []


class TestFilters(object):

    @pytest.mark.parametrize('options, expected_ids', [
        ({'event_types': ['Reboot', 'Redeploy']}, ['2222', '3333']),
        ({'event_types': ['preempt']}, ['4444']),
        ({'event_statuses': ['Started']}, ['3333', '5555']),
        ({'event_sources': ['User']}, ['2222', '5555']),
        ({'event_types': ['Terminate', 'Freeze'], 'event_sources': ['platform']}, ['1111']),
        ({'event_types': ['Freeze'], 'event_statuses': ['Started']}, []),
        ({'event_types': [], 'event_statuses': [], 'event_sources': []}, ['1111', '2222', '3333', '4444', '5555']),
    ])
    def test_filters_select_events(self, run, options, expected_ids):
        raw = load_fixture('mixed_types.json')
        result = run(ScriptedImds([raw]), resource_name='WestNO_0', **options)
        assert [event['event_id'][:4] for event in result['events']] == expected_ids
        assert result['raw'] == raw

    def test_filters_apply_to_this_vm_events_and_pending(self, run):
        result = run(ScriptedImds([load_fixture('mixed_types.json')]), resource_name='WestNO_0',
                     event_statuses=['Scheduled'], event_types=['Redeploy', 'Terminate'])
        assert result['this_vm_events'] == []
        assert result['maintenance_pending'] is False

    def test_unknown_filter_value_warns(self, run):
        result = run(ScriptedImds([load_fixture('mixed_types.json')]), event_types=['Reboots'])
        assert result['events'] == []
        texts = warning_texts(result)
        assert any("'Reboots' is not a known EventType" in text for text in texts)


class TestResourceName(object):

    def test_option_wins_and_skips_discovery(self, run):
        imds = ScriptedImds([load_fixture('westno_2.json')])
        result = run(imds, resource_name='WestNO_1')
        assert result['resource_name'] == 'WestNO_1'
        assert result['resource_name_source'] == 'option'
        assert imds.urls('compute') == []
        assert result['events'][0]['is_leader'] is False

    def test_scale_set_name_from_compute(self, run):
        compute = dict(load_fixture('compute_westno_0.json'), name='myScaleSet_3', vmScaleSetName='myScaleSet')
        result = run(ScriptedImds([load_fixture('westno_1.json')], compute=compute))
        assert result['resource_name'] == 'myScaleSet_3'

    def test_discovery_failure_falls_back_to_host_name_with_warning(self, run, monkeypatch):
        monkeypatch.setattr(_se_identity.socket, 'gethostname', lambda: 'westno_1.internal.example')
        imds = ScriptedImds([load_fixture('westno_2.json')])
        imds.compute_faults.append(json_response(404, {'error': 'Not found'}))
        result = run(imds)
        assert result['failed'] is False
        assert result['resource_name'] == 'westno_1'
        assert result['resource_name_source'] == 'hostname'
        assert result['events'][0]['affects_this_vm'] is True
        texts = warning_texts(result)
        assert any('Could not learn this VM' in text and 'resource_name' in text for text in texts)


class TestErrors(object):

    def test_missing_metadata_header_400(self, run):
        imds = ScriptedImds([load_fixture('westno_1.json')])
        imds.events_faults.append(json_response(400, {'error': 'Bad request. Required metadata header not specified'}))
        result = run(imds)
        assert result['failed'] is True
        assert 'HTTP 400' in result['msg'] and 'proxy' in result['msg'] and 'Metadata' in result['msg']
        assert len(imds.urls('scheduledevents')) == 1

    def test_bad_path_404(self, run):
        imds = ScriptedImds([load_fixture('westno_1.json')])
        imds.events_faults.append(json_response(404, {'error': 'Not found'}))
        result = run(imds)
        assert result['failed'] is True
        assert 'HTTP 404' in result['msg'] and '/metadata/scheduledevents' in result['msg']

    def test_malformed_document_after_retries(self, run):
        imds = ScriptedImds([load_fixture('westno_1.json')])
        for dummy in range(3):
            imds.events_faults.append(HttpResponse(200, {}, b'{"DocumentIncarnation": 1, "Ev'))
        result = run(imds, retries=2)
        assert result['failed'] is True
        assert 'not JSON' in result['msg']
        assert len(imds.urls('scheduledevents')) == 3

    def test_unreachable_endpoint_says_what_to_do(self, run):
        imds = ScriptedImds([load_fixture('westno_1.json')])
        for dummy in range(3):
            imds.events_faults.append(ImdsUnreachableError('could not connect (Connection refused)'))
        result = run(imds, retries=2)
        assert result['failed'] is True
        assert 'IMDS unreachable' in result['msg'] and 'Is this an Azure VM?' in result['msg']

    def test_timeout_mentions_first_call_delay(self, run):
        imds = ScriptedImds([load_fixture('westno_1.json')])
        imds.events_faults.extend([ImdsTimeoutError('no answer'), ImdsTimeoutError('no answer')])
        result = run(imds, retries=1)
        assert result['failed'] is True
        assert '2 minutes' in result['msg']

    def test_invalid_endpoint(self, run):
        result = run(ScriptedImds([]), endpoint='ftp://example/metadata/scheduledevents')
        assert result['failed'] is True
        assert 'http://' in result['msg']

    @pytest.mark.parametrize('status', [410, 429, 500, 503])
    def test_passing_faults_are_retried(self, run, clock, status):
        imds = ScriptedImds([load_fixture('westno_2.json')])
        imds.events_faults.extend([json_response(status, {'error': 'injected'})] * 2)
        result = run(imds)
        assert result['failed'] is False
        assert result['document_incarnation'] == 2
        assert len(imds.urls('scheduledevents')) == 3
        assert len(clock.sleeps) == 2

    def test_throttling_that_persists_fails_with_advice(self, run):
        imds = ScriptedImds([load_fixture('westno_2.json')])
        imds.events_faults.extend([json_response(429, {'error': 'Too many requests'})] * 3)
        result = run(imds, retries=2)
        assert result['failed'] is True
        assert 'HTTP 429' in result['msg'] and '5 requests per second' in result['msg']


class TestWaiting(object):

    def test_any_event_returns_the_document_that_satisfied_it(self, run, clock):
        imds = ScriptedImds([load_fixture('westno_1.json'), load_fixture('westno_1.json'), load_fixture('westno_2.json')])
        result = run(imds, wait_for='any_event', wait_timeout=30)
        assert result['failed'] is False
        assert result['document_incarnation'] == 2
        assert result['polls'] == 3
        assert result['waited'] == pytest.approx(2.0)
        assert clock.sleeps == [1.0, 1.0]
        # The name is learned once, after the first events answer.
        assert len(imds.urls('compute')) == 1
        assert 'scheduledevents' in imds.requests[0]['url']

    def test_condition_already_true_costs_one_poll(self, run, clock):
        result = run(ScriptedImds([load_fixture('westno_2.json')]), wait_for='this_vm_event')
        assert result['polls'] == 1 and result['waited'] == 0
        assert clock.sleeps == []

    def test_this_vm_event_ignores_events_of_other_vms(self, run):
        freeze_of_other_vm = dict(load_fixture('westno_2.json')['Events'][0], Resources=['WestNO_1'])
        other = {'DocumentIncarnation': 5, 'Events': [freeze_of_other_vm]}
        imds = ScriptedImds([other, other, load_fixture('westno_2.json')])
        result = run(imds, wait_for='this_vm_event', poll_interval=0.5)
        assert result['polls'] == 3
        assert result['waited'] == pytest.approx(1.0)
        assert result['this_vm_events'][0]['event_id'] == FREEZE_ID

    def test_this_vm_event_respects_the_type_filter(self, run):
        documents = [load_fixture('westno_2.json'), load_fixture('mixed_types.json')]
        result = run(ScriptedImds(documents), wait_for='this_vm_event', event_types=['Redeploy'])
        assert result['polls'] == 2
        assert [event['event_type'] for event in result['events']] == ['Redeploy']

    def test_no_this_vm_events_follows_the_westno_lifecycle(self, run):
        documents = [load_fixture(name) for name in ('westno_2.json', 'westno_3.json', 'westno_4.json')]
        result = run(ScriptedImds(documents), wait_for='no_this_vm_events')
        assert result['document_incarnation'] == 4
        assert result['polls'] == 3
        assert result['maintenance_pending'] is False

    def test_a_guessed_name_never_ends_a_wait_for_no_events_of_this_vm(self, run):
        # The instance metadata is throttled at first: the host name stands in
        # for the VM name, matches nothing in Resources, and must not make
        # "none of this VM's events left" hold while its Freeze is pending.
        documents = [load_fixture('westno_2.json')] * 3 + [load_fixture('westno_4.json')]
        imds = ScriptedImds(documents)
        imds.compute_faults.extend([json_response(429, {'error': 'throttled'})] * 2)
        result = run(imds, wait_for='no_this_vm_events', retries=0)
        assert result['document_incarnation'] == 4 and result['polls'] == 4
        assert (result['resource_name'], result['resource_name_source']) == ('WestNO_0', 'imds')

    def test_a_wait_that_never_learns_the_name_says_so_when_it_times_out(self, run):
        imds = ScriptedImds([load_fixture('westno_4.json')])
        imds.compute_faults.extend([json_response(429, {'error': 'throttled'})] * 100)
        result = run(imds, wait_for='no_this_vm_events', retries=0, wait_timeout=3, poll_interval=1)
        assert result['failed'] is True and "this VM's name is only a guess" in result['msg']

    def test_incarnation_change_since_a_given_incarnation(self, run):
        documents = [load_fixture(name) for name in ('westno_2.json', 'westno_2.json', 'westno_3.json')]
        result = run(ScriptedImds(documents), wait_for='incarnation_change', since_incarnation=2)
        assert result['document_incarnation'] == 3 and result['polls'] == 3

    def test_incarnation_change_counts_a_restart(self, run):
        # After 24 hours without requests Azure starts the incarnation over.
        result = run(ScriptedImds([load_fixture('westno_1.json')]), wait_for='incarnation_change', since_incarnation=9)
        assert result['document_incarnation'] == 1 and result['polls'] == 1

    def test_incarnation_change_without_baseline_uses_the_first_document(self, run):
        documents = [load_fixture(name) for name in ('westno_1.json', 'westno_1.json', 'westno_2.json')]
        result = run(ScriptedImds(documents), wait_for='incarnation_change')
        assert result['document_incarnation'] == 2 and result['polls'] == 3

    def test_timeout_names_the_condition_and_last_state(self, run, clock):
        imds = ScriptedImds([load_fixture('westno_2.json')])
        result = run(imds, wait_for='no_this_vm_events', wait_timeout=3, poll_interval=1)
        assert result['failed'] is True
        msg = result['msg']
        assert msg.startswith('Timed out waiting for no selected event affecting this VM')
        assert 'DocumentIncarnation 2' in msg and FREEZE_ID in msg and 'Scheduled' in msg and 'WestNO_0' in msg
        assert result['document_incarnation'] == 2
        assert result['maintenance_pending'] is True
        assert 'raw' not in result
        assert clock.now - 5000.0 == pytest.approx(3.0)
        assert len(imds.urls('scheduledevents')) == 4

    def test_timeout_of_incarnation_change_names_the_baseline(self, run):
        result = run(ScriptedImds([load_fixture('westno_2.json')]), wait_for='incarnation_change', wait_timeout=2)
        assert result['failed'] is True
        assert 'DocumentIncarnation to change from 2' in result['msg']

    def test_passing_faults_do_not_end_the_wait(self, run):
        imds = ScriptedImds([load_fixture('westno_1.json'), load_fixture('westno_2.json')])
        imds.events_faults.extend([json_response(500, {'error': 'boom'})] * 2)
        result = run(imds, wait_for='any_event', wait_timeout=60)
        assert result['failed'] is False
        assert result['document_incarnation'] == 2
        assert len(imds.urls('scheduledevents')) == 4

    def test_errors_that_retrying_cannot_cure_end_the_wait(self, run):
        imds = ScriptedImds([load_fixture('westno_1.json')])
        imds.events_faults.append(json_response(404, {'error': 'Not found'}))
        result = run(imds, wait_for='any_event', wait_timeout=60)
        assert result['failed'] is True and 'HTTP 404' in result['msg']

    def test_poll_interval_below_the_throttle_is_refused(self, run):
        imds = ScriptedImds([load_fixture('westno_1.json')])
        result = run(imds, wait_for='any_event', poll_interval=0.1)
        assert result['failed'] is True
        assert 'throttle' in result['msg'] and '0.25' in result['msg']
        assert imds.requests == []

    def test_negative_wait_timeout_is_refused(self, run):
        result = run(ScriptedImds([load_fixture('westno_1.json')]), wait_for='any_event', wait_timeout=-1)
        assert result['failed'] is True and 'wait_timeout' in result['msg']

    def test_unknown_wait_choice_is_refused_by_the_argument_spec(self, run):
        result = run(ScriptedImds([load_fixture('westno_1.json')]), wait_for='forever')
        assert result['failed'] is True and 'wait_for' in result['msg']
