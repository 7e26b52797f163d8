# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the scheduled_events_approve module.

The module runs for real down to the HTTP transport, which is replaced by a
scripted IMDS; time is simulated, so waits and retries cost nothing. Tests
assert on the module's JSON output and on the requests IMDS received.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import copy
import json
import os

import pytest

from ansible.module_utils import basic
from ansible.module_utils.common import warnings as module_warnings

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils import _se_options
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import ImdsUnreachableError
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_transport import HttpResponse
from ansible_collections.azure_maintenance.scheduled_events.plugins.modules import scheduled_events_approve

FIXTURES = os.path.join(os.path.dirname(__file__), 'fixtures', 'approve')

FREEZE_SHARED = 'C7061BAC-AFDC-4513-B24B-AA5F13A16123'  # Resources [WestNO_0, WestNO_1]
USER_REBOOT = 'F020BA2E-3BC0-4C40-A10B-86575A9EABD5'  # Resources [WestNO_1]
HARDWARE_REBOOT = '5A2B1E3C-0D4F-4E6A-8B9C-1D2E3F4A5B6C'  # Started, Resources [WestNO_0]
ABSENT = '11111111-2222-4333-8444-555555555555'
ENDPOINT = 'http://127.0.0.1:18381/metadata/scheduledevents'


def warning_texts(result):
    """The warnings of a result, whether ansible-core reports them as text or as structured summaries."""
    texts = []
    for warning in result.get('warnings', []):
        texts.append(warning['event']['msg'] if isinstance(warning, dict) else warning)
    return texts


def load_fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return json.load(handle)


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
    """Simulated monotonic time that advances only when slept."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def with_status(document, event_id, status):
    changed = copy.deepcopy(document)
    for event in changed['Events']:
        if event['EventId'] == event_id:
            event['EventStatus'] = status
            if status == 'Started':
                event['NotBefore'] = ''
    changed['DocumentIncarnation'] += 1
    return changed


def without(document, event_id):
    changed = copy.deepcopy(document)
    changed['Events'] = [event for event in changed['Events'] if event['EventId'] != event_id]
    changed['DocumentIncarnation'] += 1
    return changed


class ScriptedImds(object):
    """An IMDS transport: serves documents, records requests, answers scripted faults first.

    ``documents`` is a timeline: each GET of the events document returns the
    first one and moves on while more remain, so a wait sees them in turn.
    ``after_post`` (a list of documents) replaces the timeline when a POST
    succeeds, as approval changes what IMDS serves.
    """

    def __init__(self, documents, compute=None, after_post=None):
        self.documents = list(documents)
        self.compute = compute if compute is not None else load_fixture('compute_westno_0.json')
        self.after_post = after_post
        self.faults = []
        self.requests = []

    def fail_next(self, method, status, body=None):
        self.faults.append((method, status, body if body is not None else {'error': 'injected %d' % status}))

    @property
    def posts(self):
        return [json.loads(body.decode('utf-8')) for method, path, body in self.requests if method == 'POST']

    def request(self, method, url, headers, body=None, connect_timeout=None, read_timeout=None):
        assert headers['Metadata'] == 'true'
        self.requests.append((method, url, body))
        for position, (fault_method, status, fault_body) in enumerate(self.faults):
            if fault_method == method:
                del self.faults[position]
                return HttpResponse(status, {}, json.dumps(fault_body).encode('utf-8'))
        if '/metadata/instance/compute' in url:
            return HttpResponse(200, {}, json.dumps(self.compute).encode('utf-8'))
        if method == 'GET':
            document = self.documents[0]
            if len(self.documents) > 1:
                self.documents.pop(0)
            return HttpResponse(200, {}, json.dumps(document).encode('utf-8'))
        known = set(event.get('EventId', '').lower() for event in self.documents[0]['Events'])
        asked = [entry['EventId'] for entry in json.loads(body.decode('utf-8'))['StartRequests']]
        unknown = [event_id for event_id in asked if event_id.lower() not in known]
        if unknown:
            return HttpResponse(400, {}, json.dumps({'error': 'Bad request. Unknown EventId %s' % unknown[0]}).encode())
        if self.after_post is not None:
            self.documents = list(self.after_post)
        return HttpResponse(200, {}, b'')

    def close(self):
        pass


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def run(monkeypatch, capsys, clock):
    """Run the module with ``args`` against ``imds``; return ``(failed, result)``."""

    def run_module(imds, check_mode=False, **args):
        args.setdefault('endpoint', ENDPOINT)
        if check_mode:
            args['_ansible_check_mode'] = True

        def client_from_options(params):
            return _se_options.client_from_options(params, transport=imds, sleep=clock.sleep,
                                                   monotonic=clock.monotonic)

        monkeypatch.setattr(scheduled_events_approve, 'client_from_options', client_from_options)
        # Warnings are collected process-wide; one run's must not leak into the next.
        module_warnings._global_warnings.clear()
        with module_args(args):
            with pytest.raises(SystemExit) as exited:
                scheduled_events_approve.main()
        result = json.loads(capsys.readouterr().out)
        assert bool(result.get('failed')) == (exited.value.code != 0)
        return bool(result.get('failed')), result

    return run_module


@pytest.fixture
def document():
    return load_fixture('two_vm_events.json')


# --- selection and the POST ---------------------------------------------------------------

def test_approves_by_id_with_one_post(run, document):
    imds = ScriptedImds([document], after_post=[with_status(document, FREEZE_SHARED, 'Started')])
    failed, result = run(imds, event_ids=[FREEZE_SHARED.lower()])
    assert not failed
    assert result['changed'] is True
    assert result['approved'] == [FREEZE_SHARED]
    assert result['skipped_events'] == []
    assert imds.posts == [{'StartRequests': [{'EventId': FREEZE_SHARED}]}]
    # The result describes the document after approving.
    assert result['document_incarnation'] == 3
    assert result['last_statuses'] == {FREEZE_SHARED: 'Started'}
    assert result['resource_name'] == 'WestNO_0'
    assert result['resource_name_source'] == 'imds'
    assert result['waited'] == 0


def test_approves_several_events_in_one_post(run, document):
    imds = ScriptedImds([document])
    failed, result = run(imds, event_ids=[FREEZE_SHARED, USER_REBOOT], scope='all')
    assert not failed
    assert result['approved'] == [FREEZE_SHARED, USER_REBOOT]
    assert imds.posts == [{'StartRequests': [{'EventId': FREEZE_SHARED}, {'EventId': USER_REBOOT}]}]


def test_filters_select_only_this_vms_events(run, document):
    imds = ScriptedImds([document])
    failed, result = run(imds, event_types=['Freeze', 'Reboot'])
    assert not failed
    assert result['approved'] == [FREEZE_SHARED]
    assert result['skipped_events'] == [{'event_id': HARDWARE_REBOOT, 'reason': 'already_started'}]
    assert imds.posts == [{'StartRequests': [{'EventId': FREEZE_SHARED}]}]


def test_resource_name_option_overrides_imds(run, document):
    imds = ScriptedImds([document])
    failed, result = run(imds, event_sources=['User'], resource_name='WestNO_1')
    assert not failed
    assert result['approved'] == [USER_REBOOT]
    assert result['resource_name_source'] == 'option'
    assert not any('/metadata/instance' in url for dummy, url, dummy_body in imds.requests)


def test_leader_approves_and_follower_skips(run, document):
    leader_imds = ScriptedImds([document])
    follower_imds = ScriptedImds([document])
    dummy, leader = run(leader_imds, event_ids=[FREEZE_SHARED], leader_only=True, resource_name='WestNO_0')
    dummy, follower = run(follower_imds, event_ids=[FREEZE_SHARED], leader_only=True, resource_name='WestNO_1')
    assert leader['changed'] is True and leader['approved'] == [FREEZE_SHARED]
    assert follower['changed'] is False and follower['approved'] == []
    assert follower['skipped_events'] == [{'event_id': FREEZE_SHARED, 'reason': 'not_leader'}]
    assert len(leader_imds.posts) == 1 and follower_imds.posts == []


def test_nothing_to_approve_is_not_a_change(run, document):
    imds = ScriptedImds([document])
    failed, result = run(imds, event_ids=[HARDWARE_REBOOT, USER_REBOOT])
    assert not failed
    assert result['changed'] is False
    assert result['skipped_events'] == [{'event_id': HARDWARE_REBOOT, 'reason': 'already_started'},
                                        {'event_id': USER_REBOOT, 'reason': 'not_this_vm'}]
    assert imds.posts == []
    assert result['events'][0]['event_id'] == FREEZE_SHARED


def test_result_never_carries_a_skipped_key_so_ansible_does_not_report_the_task_as_skipped(run, document):
    imds = ScriptedImds([document])
    dummy, result = run(imds, event_ids=[FREEZE_SHARED, HARDWARE_REBOOT])
    assert result['changed'] is True
    assert result['skipped_events'] == [{'event_id': HARDWARE_REBOOT, 'reason': 'already_started'}]
    assert 'skipped' not in result


def test_second_run_after_approval_is_idempotent(run, document):
    imds = ScriptedImds([document], after_post=[with_status(document, FREEZE_SHARED, 'Started')])
    dummy, first = run(imds, event_types=['Freeze'])
    dummy, second = run(imds, event_types=['Freeze'])
    assert first['changed'] is True
    assert second['changed'] is False
    assert second['skipped_events'] == [{'event_id': FREEZE_SHARED, 'reason': 'already_started'}]
    assert len(imds.posts) == 1


def test_check_mode_posts_nothing_and_predicts_the_change(run, document):
    imds = ScriptedImds([document])
    failed, result = run(imds, check_mode=True, event_ids=[FREEZE_SHARED, HARDWARE_REBOOT], wait='completed')
    assert not failed
    assert result['changed'] is True
    assert result['approved'] == [FREEZE_SHARED]
    assert result['skipped_events'] == [{'event_id': HARDWARE_REBOOT, 'reason': 'already_started'}]
    assert imds.posts == []
    assert result['waited'] == 0
    assert [method for method, dummy, dummy_body in imds.requests] == ['GET', 'GET']


def test_check_mode_with_nothing_to_approve_is_unchanged(run, document):
    imds = ScriptedImds([document])
    dummy, result = run(imds, check_mode=True, event_ids=[HARDWARE_REBOOT])
    assert result['changed'] is False
    assert imds.posts == []


def test_document_warnings_are_reported_once(run, document):
    document['Events'].append({'EventStatus': 'Scheduled', 'EventType': 'Freeze', 'Resources': ['WestNO_0']})
    imds = ScriptedImds([document])
    failed, result = run(imds, event_types=['Freeze'])
    assert not failed
    without_id = [text for text in warning_texts(result) if 'without EventId' in text]
    assert len(without_id) == 1
    # The event without id is never approved.
    assert imds.posts == [{'StartRequests': [{'EventId': FREEZE_SHARED}]}]


# --- refusals before any POST -----------------------------------------------------------

def test_no_selection_fails_before_any_request(run, document):
    imds = ScriptedImds([document])
    failed, result = run(imds)
    assert failed
    assert 'must be asked for explicitly' in result['msg']
    assert imds.requests == []


def test_malformed_id_fails_before_any_request(run, document):
    imds = ScriptedImds([document])
    failed, result = run(imds, event_ids=[FREEZE_SHARED, 'freeze-please'])
    assert failed
    assert "'freeze-please'" in result['msg']
    assert imds.requests == []


def test_missing_id_fails_without_posting(run, document):
    imds = ScriptedImds([document])
    failed, result = run(imds, event_ids=[FREEZE_SHARED, ABSENT])
    assert failed
    assert ABSENT in result['msg'] and 'missing: ignore' in result['msg']
    assert result['changed'] is False
    assert imds.posts == []


def test_missing_id_ignored_is_skipped_as_gone(run, document):
    imds = ScriptedImds([document])
    failed, result = run(imds, event_ids=[ABSENT, FREEZE_SHARED], missing='ignore')
    assert not failed
    assert result['approved'] == [FREEZE_SHARED]
    assert result['skipped_events'] == [{'event_id': ABSENT, 'reason': 'gone'}]
    assert imds.posts == [{'StartRequests': [{'EventId': FREEZE_SHARED}]}]


def test_allowed_vms_refuses_an_event_azure_grew_since_the_caller_looked(run, document):
    # The caller drained WestNO_0 and saw FREEZE_SHARED name only it; Azure
    # has added WestNO_1 since: approving would release an undrained VM.
    imds = ScriptedImds([document])
    failed, result = run(imds, event_ids=[FREEZE_SHARED], scope='all', allowed_vms=['westno_0'])
    assert failed and imds.posts == [] and result['changed'] is False
    assert result['msg'].startswith('event_ids name events that also affect VMs outside allowed_vms: '
                                    '%s (names WestNO_1). ' % FREEZE_SHARED)
    failed, result = run(imds, event_ids=[FREEZE_SHARED], scope='all', allowed_vms=['WestNO_0', 'WestNO_1'])
    assert not failed and result['approved'] == [FREEZE_SHARED]


def test_allowed_vms_skips_an_event_azure_grew_and_approves_the_others_when_asked(run, document):
    imds = ScriptedImds([document])
    failed, result = run(imds, event_ids=[FREEZE_SHARED, USER_REBOOT], scope='all', allowed_vms=['WestNO_1'],
                         outside_allowed='skip')
    assert not failed and result['changed'] is True
    assert result['approved'] == [USER_REBOOT]
    assert result['skipped_events'] == [{'event_id': FREEZE_SHARED, 'reason': 'foreign_vms', 'foreign_vms': ['WestNO_0']}]
    assert imds.posts == [{'StartRequests': [{'EventId': USER_REBOOT}]}]


def test_allowed_vms_with_filters_skips_the_events_naming_other_vms(run, document):
    imds = ScriptedImds([document])
    failed, result = run(imds, event_types=['Freeze', 'Reboot'], scope='all', allowed_vms=['WestNO_1'])
    assert not failed and result['approved'] == [USER_REBOOT]
    assert {'event_id': FREEZE_SHARED, 'reason': 'foreign_vms', 'foreign_vms': ['WestNO_0']} in result['skipped_events']
    assert imds.posts == [{'StartRequests': [{'EventId': USER_REBOOT}]}]


def test_ids_and_filters_together_are_refused(run, document):
    imds = ScriptedImds([document])
    failed, result = run(imds, event_ids=[FREEZE_SHARED], event_types=['Freeze'])
    assert failed and 'cannot be combined' in result['msg']
    assert imds.requests == []


@pytest.mark.parametrize('args,word', [
    ({'poll_interval': 0.1}, 'poll_interval'),
    ({'wait_timeout': -1}, 'wait_timeout'),
    ({'max_duration': -1}, 'max_duration'),
])
def test_bad_numbers_are_refused_before_any_request(run, document, args, word):
    imds = ScriptedImds([document])
    args.setdefault('event_types', ['Freeze'])
    failed, result = run(imds, **args)
    assert failed and word in result['msg']
    assert imds.requests == []


# --- IMDS errors -------------------------------------------------------------------------

def test_400_fails_with_imds_message(run, document):
    imds = ScriptedImds([document])
    imds.fail_next('POST', 400, {'error': 'Bad request. Malformed StartRequests'})
    failed, result = run(imds, event_ids=[FREEZE_SHARED])
    assert failed
    assert 'Bad request. Malformed StartRequests' in result['msg']
    assert 'HTTP 400' in result['msg']
    assert result['changed'] is False
    assert result['approved'] == []
    assert len(imds.posts) == 1


def test_event_vanishing_before_the_post_is_skipped_as_gone(run, document):
    imds = ScriptedImds([document, without(document, FREEZE_SHARED)])
    failed, result = run(imds, event_ids=[FREEZE_SHARED, HARDWARE_REBOOT], scope='all')
    assert not failed
    assert result['changed'] is False
    assert result['approved'] == []
    assert {'event_id': FREEZE_SHARED, 'reason': 'gone'} in result['skipped_events']
    assert len(imds.posts) == 1
    assert result['document_incarnation'] == 3
    assert any('left the events document' in warning for warning in warning_texts(result))


def test_only_vanished_events_are_dropped_and_the_rest_approved(run, document):
    imds = ScriptedImds([document, without(document, USER_REBOOT)])
    failed, result = run(imds, event_ids=[FREEZE_SHARED, USER_REBOOT], scope='all')
    assert not failed
    assert result['changed'] is True
    assert result['approved'] == [FREEZE_SHARED]
    assert result['skipped_events'] == [{'event_id': USER_REBOOT, 'reason': 'gone'}]
    assert imds.posts[-1] == {'StartRequests': [{'EventId': FREEZE_SHARED}]}
    assert len(imds.posts) == 2


def test_allowed_vms_holds_on_the_read_made_after_a_refused_request(run, document):
    # USER_REBOOT left and Azure added WestNO_2 to FREEZE_SHARED since the
    # first read: the second request would release WestNO_2.
    later = without(document, USER_REBOOT)
    for event in later['Events']:
        if event['EventId'] == FREEZE_SHARED:
            event['Resources'] = event['Resources'] + ['WestNO_2']
    imds = ScriptedImds([document, later])
    failed, result = run(imds, event_ids=[FREEZE_SHARED, USER_REBOOT], scope='all', allowed_vms=['WestNO_0', 'WestNO_1'])
    assert failed and 'outside allowed_vms: %s (names WestNO_2)' % FREEZE_SHARED in result['msg']
    assert len(imds.posts) == 1 and result['approved'] == []


@pytest.mark.parametrize('status', [500, 503, 429, 410])
def test_transient_post_errors_are_retried(run, document, status):
    imds = ScriptedImds([document])
    imds.fail_next('POST', status)
    imds.fail_next('POST', status)
    failed, result = run(imds, event_ids=[FREEZE_SHARED])
    assert not failed
    assert result['changed'] is True
    assert len(imds.posts) == 3


class RestartingImds(ScriptedImds):
    """Accepts the approval, then goes down as a VM whose Reboot starts at once."""

    def request(self, method, url, headers, body=None, connect_timeout=None, read_timeout=None):
        if any(request[0] == 'POST' for request in self.requests):
            self.requests.append((method, url, body))
            raise ImdsUnreachableError('connection to %s closed without an answer (reset)' % url, url=url)
        return super(RestartingImds, self).request(method, url, headers, body, connect_timeout, read_timeout)


def test_an_approval_accepted_just_before_the_vm_restarts_is_still_a_success(run, document):
    imds = RestartingImds([document])
    failed, result = run(imds, event_ids=[USER_REBOOT], scope='all')
    assert not failed, result
    assert result['changed'] is True and result['approved'] == [USER_REBOOT]
    assert len(imds.posts) == 1
    assert any('was accepted' in warning and 'restarting' in warning for warning in warning_texts(result))
    # The events returned are the ones read before the approval.
    assert result['last_statuses'] == {USER_REBOOT: 'Scheduled'}


def test_persistent_server_error_fails_after_the_retries(run, document):
    imds = ScriptedImds([document])
    for dummy in range(3):
        imds.fail_next('POST', 500)
    failed, result = run(imds, event_ids=[FREEZE_SHARED], retries=2)
    assert failed
    assert 'HTTP 500' in result['msg'] and '3 attempts' in result['msg']
    assert result['changed'] is False and result['approved'] == []
    assert len(imds.posts) == 3


def test_unreadable_identity_falls_back_to_the_host_name_with_a_warning(run, document, monkeypatch):
    from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils import _se_identity
    monkeypatch.setattr(_se_identity, 'fallback_resource_name', lambda: 'WestNO_0')
    imds = ScriptedImds([document])
    imds.fail_next('GET', 404)
    failed, result = run(imds, event_types=['Freeze'])
    assert not failed
    assert result['resource_name'] == 'WestNO_0' and result['resource_name_source'] == 'hostname'
    assert any('host name' in warning for warning in warning_texts(result))


def test_events_left_out_only_because_of_a_guessed_name_fail_the_task(run, document, monkeypatch):
    # The instance metadata did not answer: the host name stands in, matches
    # nothing in Resources, and the user's own event would silently wait for
    # its NotBefore as "another VM's".
    from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils import _se_identity
    monkeypatch.setattr(_se_identity, 'fallback_resource_name', lambda: 'vm-host')
    imds = ScriptedImds([document])
    imds.fail_next('GET', 404)
    failed, result = run(imds, event_ids=[FREEZE_SHARED])
    assert failed and 'rests on a guess' in result['msg'] and FREEZE_SHARED in result['msg']
    assert 'set resource_name' in result['msg']
    assert imds.posts == [] and result['resource_name_source'] == 'hostname'


# --- waiting ------------------------------------------------------------------------------

def test_wait_started_polls_until_started(run, clock, document):
    scheduled_again = copy.deepcopy(document)
    imds = ScriptedImds([document], after_post=[scheduled_again, scheduled_again,
                                                with_status(document, FREEZE_SHARED, 'Started')])
    failed, result = run(imds, event_ids=[FREEZE_SHARED], wait='started', poll_interval=2)
    assert not failed
    assert result['last_statuses'] == {FREEZE_SHARED: 'Started'}
    assert len([method for method, dummy, dummy_body in imds.requests if method == 'GET']) == 5
    assert result['waited'] == pytest.approx(4.0)
    assert result['document_incarnation'] == 3


def test_wait_started_accepts_an_event_that_is_gone(run, document):
    imds = ScriptedImds([document], after_post=[without(document, FREEZE_SHARED)])
    failed, result = run(imds, event_ids=[FREEZE_SHARED], wait='started')
    assert not failed
    assert result['last_statuses'] == {FREEZE_SHARED: 'gone'}
    # Never seen Started: cancelled, or over between two reads.
    assert any('without being seen Started' in warning for warning in warning_texts(result))


def test_wait_completed_follows_an_already_started_event(run, clock, document):
    imds = ScriptedImds([document, document, without(document, HARDWARE_REBOOT)])
    failed, result = run(imds, event_ids=[HARDWARE_REBOOT], wait='completed')
    assert not failed
    assert result['changed'] is False
    assert result['skipped_events'] == [{'event_id': HARDWARE_REBOOT, 'reason': 'already_started'}]
    assert result['last_statuses'] == {HARDWARE_REBOOT: 'gone'}
    assert result['waited'] == pytest.approx(1.0)
    assert warning_texts(result) == []


def test_wait_started_returns_at_once_for_an_already_started_event(run, document):
    imds = ScriptedImds([document])
    failed, result = run(imds, event_ids=[HARDWARE_REBOOT], wait='started')
    assert not failed
    assert result['waited'] == 0
    assert result['last_statuses'] == {HARDWARE_REBOOT: 'Started'}


def test_wait_timeout_fails_and_still_lists_what_was_approved(run, clock, document):
    imds = ScriptedImds([document])
    failed, result = run(imds, event_ids=[FREEZE_SHARED], wait='completed', wait_timeout=5, poll_interval=1)
    assert failed
    assert result['changed'] is True
    assert result['approved'] == [FREEZE_SHARED]
    assert 'Timed out waiting for the events to be completed' in result['msg']
    assert '%s Scheduled (NotBefore Mon, 11 Apr 2022 22:26:58 GMT)' % FREEZE_SHARED in result['msg']
    assert result['last_statuses'] == {FREEZE_SHARED: 'Scheduled'}
    assert result['waited'] == pytest.approx(5.0)


def test_no_wait_when_nothing_is_followed(run, document):
    imds = ScriptedImds([document])
    failed, result = run(imds, event_ids=[ABSENT], missing='ignore', wait='completed', wait_timeout=1)
    assert not failed
    assert result['waited'] == 0
    assert result['last_statuses'] == {}
