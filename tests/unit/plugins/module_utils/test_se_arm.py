# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ARM client: throttling decisions, retries within the deadline, error messages, tokens."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import threading
from http.client import IncompleteRead
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_arm import (
    ArmClient,
    ArmError,
    arm_endpoint,
    parse_duration,
    quota_pause,
    retry_delay,
    token_source,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import (
    InvalidParameterError,
)


@pytest.mark.parametrize('text, seconds', [
    ('00:00:05', 5), ('00:01:30', 90), ('01:00:00', 3600), ('7', 7), ('2.5', 2.5),
    (None, None), ('soon', None), ('-3', None), ('1:2', None),
])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize('headers, pause', [
    ({}, 0),
    ({'x-ms-user-quota-remaining': '3', 'x-ms-user-quota-resets-after': '00:00:04'}, 0),
    ({'x-ms-user-quota-remaining': '0', 'x-ms-user-quota-resets-after': '00:00:04'}, 4),
    # Spent quota without a reset time: wait a little rather than be throttled.
    ({'x-ms-user-quota-remaining': '0'}, 1),
    ({'x-ms-user-quota-remaining': 'many'}, 0),
])
def test_quota_pause(headers, pause):
    assert quota_pause(headers) == pause


@pytest.mark.parametrize('status, headers, attempt, delay', [
    (429, {'retry-after': '3'}, 1, 3),
    (429, {'x-ms-user-quota-resets-after': '00:00:02'}, 1, 2),
    (429, {}, 2, 2),
    (503, {}, 1, 1), (500, {}, 3, 4), (None, {}, 1, 1), (408, {}, 1, 1),
    (500, {}, 6, None),
    (400, {}, 1, None), (401, {}, 1, None), (403, {}, 1, None), (404, {}, 1, None), (409, {}, 1, None),
])
def test_retry_delay(status, headers, attempt, delay):
    assert retry_delay(status, headers, attempt) == delay


class Clock(object):
    def __init__(self):
        self.now = 100.0
        self.sleeps = []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


class ScriptedArm(object):
    """Answers the scripted ``(status, headers, payload)`` in turn and records what was sent."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.sent = []

    def __call__(self, url, body, headers, timeout):
        self.sent.append({'url': url, 'body': json.loads(body.decode('utf-8')) if body else None,
                          'headers': headers, 'timeout': timeout})
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        status, headers, payload = answer
        return status, headers, json.dumps(payload).encode('utf-8')


def client(send, timeout=60, token='tok'):
    clock = Clock()
    return ArmClient('http://arm.example/', lambda: token, timeout=timeout, send=send, sleep=clock.sleep,
                     monotonic=clock.monotonic), clock


def test_post_sends_the_token_and_api_version():
    send = ScriptedArm((200, {}, {'value': 'Acknowledged'}))
    arm, dummy = client(send)
    answer, dummy = arm.post('/x/acknowledge', '2023-10-01-preview', None)
    assert answer == {'value': 'Acknowledged'}
    assert send.sent[0]['url'] == 'http://arm.example/x/acknowledge?api-version=2023-10-01-preview'
    assert send.sent[0]['headers']['Authorization'] == 'Bearer tok'


def test_429_waits_retry_after_then_succeeds():
    send = ScriptedArm((429, {'retry-after': '3'}, {'error': {'code': 'RateLimiting', 'message': 'slow down'}}),
                       OSError('connection reset'), (200, {}, {'data': []}))
    arm, clock = client(send)
    assert arm.post('/q', 'v', {})[0] == {'data': []}
    assert clock.sleeps == [3, 2]
    assert arm.throttled_waits == 2 and arm.requests == 3


def test_a_wait_past_the_deadline_fails_at_once_with_what_to_do():
    send = ScriptedArm((429, {'retry-after': '90'}, {'error': {'code': 'RateLimiting', 'message': 'slow down'}}))
    arm, clock = client(send, timeout=30)
    with pytest.raises(ArmError) as caught:
        arm.post('/q', 'v', {})
    assert caught.value.status == 429 and 'throttling' in caught.value.message
    assert clock.sleeps == []


@pytest.mark.parametrize('status, words, tries', [
    # 401: once more with a token got afresh (the first may have expired), then no more.
    (401, 'credentials', 2), (403, 'ScheduledEventContributor', 1), (404, 'HTTP 404', 1), (400, 'bad query', 1),
])
def test_errors_that_no_retry_fixes_name_the_cause(status, words, tries):
    send = ScriptedArm(*[(status, {}, {'error': {'code': 'Code%d' % status, 'message': 'bad query'}})] * tries)
    arm, dummy = client(send)
    with pytest.raises(ArmError) as caught:
        arm.post('/q', 'v', {})
    assert words in caught.value.message and caught.value.code == 'Code%d' % status
    assert len(send.sent) == tries


def test_an_expired_token_is_replaced_by_a_new_one_once():
    tokens = iter(['first', 'second', 'third'])
    send = ScriptedArm((401, {}, {'error': {'code': 'ExpiredAuthenticationToken', 'message': 'expired'}}),
                       (200, {}, {'value': 'Acknowledged'}), (200, {}, {'value': 'Acknowledged'}))
    clock = Clock()
    arm = ArmClient('http://arm.example/', lambda: next(tokens), send=send, sleep=clock.sleep,
                    monotonic=clock.monotonic)
    assert arm.post('/x/acknowledge', 'v', None)[0] == {'value': 'Acknowledged'}
    assert arm.post('/y/acknowledge', 'v', None)[0] == {'value': 'Acknowledged'}
    assert [sent['headers']['Authorization'] for sent in send.sent] == ['Bearer first', 'Bearer second',
                                                                        'Bearer second']
    assert clock.sleeps == []


def test_an_answer_cut_off_midway_is_retried():
    send = ScriptedArm(IncompleteRead(b'{"data": ['), (200, {}, {'data': []}))
    arm, clock = client(send)
    assert arm.post('/q', 'v', {})[0] == {'data': []}
    assert clock.sleeps == [1]


def test_a_redirect_is_not_followed_and_the_token_goes_nowhere_else(monkeypatch):
    # Straight to the loopback servers below, whatever proxy the environment names.
    for name in ('http_proxy', 'HTTP_PROXY', 'all_proxy', 'ALL_PROXY'):
        monkeypatch.delenv(name, raising=False)
    seen_elsewhere = []

    class Elsewhere(BaseHTTPRequestHandler):
        def do_GET(self):  # pylint: disable=invalid-name
            seen_elsewhere.append(self.headers.get('Authorization'))
            self.send_response(200)
            self.end_headers()

        do_POST = do_GET

        def log_message(self, *args):  # pylint: disable=arguments-differ
            return

    elsewhere = HTTPServer(('127.0.0.1', 0), Elsewhere)

    class Redirecting(Elsewhere):
        def do_POST(self):  # pylint: disable=invalid-name
            self.send_response(302)
            self.send_header('Location', 'http://127.0.0.1:%d/stolen' % elsewhere.server_address[1])
            self.send_header('Content-Length', '0')
            self.end_headers()

    redirecting = HTTPServer(('127.0.0.1', 0), Redirecting)
    threads = [threading.Thread(target=server.serve_forever, kwargs={'poll_interval': 0.05})
               for server in (elsewhere, redirecting)]
    for thread in threads:
        thread.start()
    try:
        arm = ArmClient('http://127.0.0.1:%d' % redirecting.server_address[1], lambda: 'secret-token', timeout=10)
        with pytest.raises(ArmError) as caught:
            arm.post('/x/acknowledge', 'v', None)
    finally:
        for server in (elsewhere, redirecting):
            server.shutdown()
            server.server_close()
        for thread in threads:
            thread.join(10)
    assert caught.value.status == 302 and seen_elsewhere == []


def test_unreachable_arm_is_retried_then_reported():
    send = ScriptedArm(*[OSError('refused')] * 6)
    arm, clock = client(send, timeout=1000)
    with pytest.raises(ArmError, match='could not be reached'):
        arm.post('/q', 'v', {})
    assert clock.sleeps == [1, 2, 4, 8, 16]


def test_options_are_checked():
    with pytest.raises(InvalidParameterError, match='management_endpoint'):
        ArmClient('management.azure.com', lambda: 't')
    with pytest.raises(InvalidParameterError, match='timeout'):
        ArmClient('https://x', lambda: 't', timeout=0)


def test_endpoints_per_cloud_and_override():
    assert arm_endpoint({}) == ('https://management.azure.com', 'https://management.azure.com/.default')
    assert arm_endpoint({'cloud_environment': 'AzureChinaCloud'})[0] == 'https://management.chinacloudapi.cn'
    assert arm_endpoint({'management_endpoint': 'http://127.0.0.1:9/'}) == ('http://127.0.0.1:9',
                                                                            'http://127.0.0.1:9/.default')


def test_bearer_token_needs_no_azure_identity():
    def no_identity():
        raise ImportError('no azure')
    assert token_source({'bearer_token': 'abc'}, import_identity=no_identity)() == 'abc'


def test_missing_azure_identity_names_the_pip_package():
    def no_identity():
        raise ImportError('no azure')
    with pytest.raises(InvalidParameterError, match='pip install azure-identity'):
        token_source({'auth_source': 'auto'}, import_identity=no_identity)


class FakeIdentity(object):
    """Stands in for azure.identity: records which credential was built, with what."""

    def __init__(self):
        self.built = []
        owner = self

        def credential(name):
            class Credential(object):
                def __init__(self, *args, **kwargs):
                    owner.built.append((name, args, kwargs))

                def get_token(self, scope):
                    if name == 'AzureCliCredential':
                        raise RuntimeError('Please run az login')

                    class Token(object):
                        token = 'token-for-' + scope
                    return Token()
            return Credential

        for name in ('DefaultAzureCredential', 'ClientSecretCredential', 'AzureCliCredential',
                     'EnvironmentCredential', 'ManagedIdentityCredential'):
            setattr(self, name, credential(name))


@pytest.mark.parametrize('options, credential', [
    ({'auth_source': 'auto'}, 'DefaultAzureCredential'),
    ({'auth_source': 'auto', 'client_id': 'c', 'secret': 's', 'tenant': 't'}, 'ClientSecretCredential'),
    ({'auth_source': 'env'}, 'EnvironmentCredential'),
    ({'auth_source': 'msi', 'client_id': 'c'}, 'ManagedIdentityCredential'),
])
def test_auth_source_picks_the_credential(options, credential):
    identity = FakeIdentity()
    get_token = token_source(dict(options, management_endpoint='https://arm.example'),
                             import_identity=lambda: identity)
    assert get_token() == 'token-for-https://arm.example/.default'
    assert identity.built[0][0] == credential


def test_credential_failures_become_arm_errors_with_their_text():
    identity = FakeIdentity()
    get_token = token_source({'auth_source': 'cli'}, import_identity=lambda: identity)
    with pytest.raises(ArmError, match='az login'):
        get_token()


def test_secret_without_tenant_is_refused():
    with pytest.raises(InvalidParameterError, match='client_id and tenant'):
        token_source({'secret': 's', 'client_id': 'c'}, import_identity=FakeIdentity)
