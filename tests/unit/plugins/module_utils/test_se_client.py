# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ImdsClient: what it sends, how it retries, what its errors say.

Wire behaviour is checked against the loopback server; retry sequences use a
scripted transport and a fake clock, so no test waits for real backoff.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import time

import pytest

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_client import (
    CONNECT_TIMEOUT,
    DEFAULT_ENDPOINT,
    FIRST_CALL_TIMEOUT,
    ImdsClient,
    origin_of,
    validate_api_version,
    validate_endpoint,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import (
    ImdsHttpError,
    ImdsRedirectError,
    ImdsTimeoutError,
    ImdsUnreachableError,
    InvalidParameterError,
    MalformedDocumentError,
    RequestCancelledError,
    ScheduledEventsError,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_retry import RetryPolicy
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils import _se_client

PATH = '/metadata/scheduledevents'
COMPUTE_PATH = '/metadata/instance/compute'
FREEZE_ID = 'C7061BAC-AFDC-4513-B24B-AA5F13A16123'
TERMINATE_ID = 'f020ba2e-3bc0-4c40-a10b-86575a9eabd5'
EMPTY_DOCUMENT = {'DocumentIncarnation': 1, 'Events': []}


def pinned_policy(retries=5, **kwargs):
    return RetryPolicy(retries=retries, random_func=lambda: 0.0, **kwargs)


@pytest.fixture
def make_client(fake_clock):
    """Factory for clients on the fake clock; every client made is closed afterwards."""
    made = []

    def make(endpoint=DEFAULT_ENDPOINT, **kwargs):
        kwargs.setdefault('sleep', fake_clock.sleep)
        kwargs.setdefault('monotonic', fake_clock.monotonic)
        client = ImdsClient(endpoint=endpoint, **kwargs)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


# --- what goes on the wire -------------------------------------------------

def test_get_document_sends_what_imds_requires(make_client, loopback_imds, reply, fixture_json):
    loopback_imds.script(PATH, reply(200, fixture_json('westno_incarnation_2.json')))
    client = make_client(loopback_imds.endpoint)
    normalized, raw = client.get_document()
    assert raw == fixture_json('westno_incarnation_2.json')
    assert normalized['document_incarnation'] == 2
    assert normalized['events'][0]['event_id'] == FREEZE_ID

    request = loopback_imds.requests[0]
    assert request.method == 'GET'
    assert request.path == PATH
    assert request.query == {'api-version': ['2020-07-01']}
    assert request.headers['Metadata'] == 'true'
    assert request.headers['User-Agent'].startswith('azure_maintenance.scheduled_events/')
    assert 'X-Forwarded-For' not in request.headers
    assert 'Forwarded' not in request.headers
    assert 'Content-Type' not in request.headers


def test_api_version_is_sent_and_used_for_parsing(make_client, loopback_imds, reply, fixture_json):
    loopback_imds.script(PATH, reply(200, fixture_json('document_2017-03-01.json')))
    client = make_client(loopback_imds.endpoint, api_version='2017-03-01')
    normalized, raw = client.get_document()
    assert loopback_imds.requests[0].query == {'api-version': ['2017-03-01']}
    assert raw['Events'][0]['Resources'] == ['_WestNO_0', '_WestNO_1']
    assert normalized['events'][0]['resources'] == ['WestNO_0', 'WestNO_1']
    assert client.events_url == loopback_imds.endpoint + '?api-version=2017-03-01'


def test_proxy_environment_is_ignored(make_client, loopback_imds, reply, trap_listener, monkeypatch):
    trap_port, trap_was_connected = trap_listener
    for name in ('HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'ALL_PROXY'):
        monkeypatch.setenv(name, 'http://127.0.0.1:%d' % trap_port)
    monkeypatch.delenv('NO_PROXY', raising=False)
    monkeypatch.delenv('no_proxy', raising=False)
    loopback_imds.script(PATH, reply(200, EMPTY_DOCUMENT))
    client = make_client(loopback_imds.endpoint, retries=0)
    assert client.get_document()[0]['events'] == []
    assert loopback_imds.requests[0].target.startswith(PATH + '?')
    assert not trap_was_connected()


@pytest.mark.parametrize('status', [301, 302, 303, 307, 308])
def test_redirects_are_refused(make_client, loopback_imds, reply, status, fake_clock):
    loopback_imds.script(PATH, reply(status, {}, headers={'Location': 'http://evil.example/steal'}))
    client = make_client(loopback_imds.endpoint, retries=5)
    with pytest.raises(ImdsRedirectError) as caught:
        client.get_document()
    message = str(caught.value)
    assert 'HTTP %d' % status in message
    assert 'http://evil.example/steal' in message
    assert 'Reach IMDS directly' in message
    assert not caught.value.retryable
    assert len(loopback_imds.requests) == 1
    assert fake_clock.sleeps == []


def test_keep_alive_across_polls(make_client, loopback_imds, reply):
    loopback_imds.script(PATH, reply(200, EMPTY_DOCUMENT))
    client = make_client(loopback_imds.endpoint)
    for dummy in range(3):
        client.get_document()
    assert len(set(request.peer for request in loopback_imds.requests)) == 1


def test_poll_after_the_server_closed_the_connection_costs_no_retry(make_client, loopback_imds, reply, fake_clock):
    loopback_imds.script(PATH, reply(200, EMPTY_DOCUMENT, close_after=True),
                         reply(200, dict(EMPTY_DOCUMENT, DocumentIncarnation=2)))
    client = make_client(loopback_imds.endpoint, retries=0)
    client.get_document()
    time.sleep(0.05)
    assert client.get_document()[0]['document_incarnation'] == 2
    assert fake_clock.sleeps == []
    assert [entry[2] for entry in client.attempt_log] == [200, 200]


def test_first_call_may_be_slow_later_calls_may_not(make_client, loopback_imds, reply):
    loopback_imds.script(PATH, reply(200, EMPTY_DOCUMENT, delay=0.3))
    client = make_client(loopback_imds.endpoint, timeout=0.1, first_call_timeout=1.5, retries=0)
    assert client.get_document()[0]['document_incarnation'] == 1
    with pytest.raises(ImdsTimeoutError) as caught:
        client.get_document()
    message = str(caught.value)
    assert 'did not answer to the only attempt' in message
    # The first call's allowance was spent on the first request: this one says so.
    assert 'first request' not in message and 'at most 0.1 s' in message
    assert 'raise timeout' in message and 'deadline' in message
    assert caught.value.retryable


def test_refused_connection_fails_fast_with_advice(make_client, closed_port, fake_clock):
    client = make_client('http://127.0.0.1:%d%s' % (closed_port, PATH), retries=2, policy=pinned_policy(retries=2))
    with pytest.raises(ImdsUnreachableError) as caught:
        client.get_document()
    message = str(caught.value)
    assert 'after 3 attempts' in message
    assert 'Is this an Azure VM?' in message and 'set endpoint' in message
    assert fake_clock.sleeps == [0.5, 1.0]
    assert [entry[2] for entry in client.attempt_log] == ['connection failure'] * 3


# --- what errors say -------------------------------------------------------

ERROR_CASES = [
    (400, {'error': 'Bad request. Required metadata header not specified'}, ['NO_PROXY', 'Metadata: true']),
    (400, {'error': 'Bad request. api-version is invalid or was not specified in the request.',
           'newest-versions': ['2020-07-01', '2019-08-01']},
     ['set api_version', 'IMDS supports: 2020-07-01, 2019-08-01']),
    (400, {'error': 'Bad request. Requests carrying the X-Forwarded-For header are rejected'},
     ['X-Forwarded-For', 'reach it directly']),
    (400, {'error': 'Bad request. X-Forwarded-For header is not allowed by the metadata service'},
     ['X-Forwarded-For); reach it directly']),
    (400, {'error': 'Bad request. Invalid EventId'}, ['refused as malformed', 'Invalid EventId']),
    (404, {'error': 'Not found. Unknown IMDS path'}, ['check that endpoint is the IMDS address']),
    (405, {'error': 'Method not allowed.'}, ['does not allow GET']),
    (418, {'message': 'teapot'}, ['IMDS does not document HTTP 418', 'teapot']),
    # What a firewall in front of 169.254.169.254 may answer: not IMDS.
    (403, b'resolve_deny: denied destination',
     ['denied destination', 'something other than IMDS probably answered', 'Check endpoint', 'directly']),
    (400, b'plain text refusal', ['plain text refusal']),
]


@pytest.mark.parametrize('status, payload, expected', ERROR_CASES)
def test_final_errors_say_what_to_do(make_client, loopback_imds, reply, fake_clock, status, payload, expected):
    if isinstance(payload, bytes):
        loopback_imds.script(PATH, reply(status, body=payload))
    else:
        loopback_imds.script(PATH, reply(status, payload))
    client = make_client(loopback_imds.endpoint, retries=5)
    with pytest.raises(ImdsHttpError) as caught:
        client.get_document()
    error = caught.value
    message = str(error)
    assert message.startswith('IMDS answered HTTP %d to GET %s' % (status, client.events_url))
    assert 'What to do:' in message
    for text in expected:
        assert text in message
    assert error.status == status
    assert error.url == client.events_url
    # Requests IMDS refused as wrong are not worth repeating.
    assert len(loopback_imds.requests) == 1
    assert fake_clock.sleeps == []
    assert not error.retryable


def test_header_advice_does_not_hide_the_api_version_advice(make_client, loopback_imds, reply):
    loopback_imds.script(PATH, reply(400, {'error': 'Bad request. api-version was not specified in the request.'}))
    with pytest.raises(ImdsHttpError, match='set api_version'):
        make_client(loopback_imds.endpoint).get_document()


def test_imds_message_is_kept_on_the_error(make_client, loopback_imds, reply):
    loopback_imds.script(PATH, reply(404, {'error': 'Not found. Unknown IMDS path /x'}))
    with pytest.raises(ImdsHttpError) as caught:
        make_client(loopback_imds.endpoint).get_document()
    assert caught.value.imds_message == 'Not found. Unknown IMDS path /x'
    assert json.loads(caught.value.body.decode('utf-8')) == {'error': 'Not found. Unknown IMDS path /x'}


def test_post_refused_names_the_method(make_client, loopback_imds, reply):
    loopback_imds.script(PATH, reply(405, {'error': 'Method not allowed.'}))
    with pytest.raises(ImdsHttpError, match='does not allow POST'):
        make_client(loopback_imds.endpoint).approve([FREEZE_ID])


def test_throttling_gives_up_after_retries_with_advice(make_client, loopback_imds, reply, fake_clock):
    loopback_imds.script(PATH, reply(429, {'error': 'Too many requests'}))
    client = make_client(loopback_imds.endpoint, policy=pinned_policy(retries=3))
    with pytest.raises(ImdsHttpError) as caught:
        client.get_document()
    message = str(caught.value)
    assert 'after 4 attempts' in message and 'about 5 requests per second' in message and 'poll less often' in message
    assert caught.value.retryable
    assert len(loopback_imds.requests) == 4
    assert fake_clock.sleeps == [0.5, 1.0, 2.0]


def test_server_errors_give_up_after_retries_with_advice(make_client, loopback_imds, reply, fake_clock):
    loopback_imds.script(PATH, reply(500, {'error': 'Internal error'}))
    client = make_client(loopback_imds.endpoint, policy=pinned_policy(retries=2))
    with pytest.raises(ImdsHttpError, match='internal error after 3 attempts; this is usually transient'):
        client.get_document()
    assert len(loopback_imds.requests) == 3


def test_gone_is_retried_for_about_seventy_seconds(make_client, loopback_imds, reply, fake_clock):
    loopback_imds.script(PATH, reply(410, {'error': 'Gone'}))
    client = make_client(loopback_imds.endpoint, policy=pinned_policy(retries=1))
    with pytest.raises(ImdsHttpError) as caught:
        client.get_document()
    assert '~70 s' in str(caught.value)
    assert 60.0 <= sum(fake_clock.sleeps) <= 70.0
    assert len(loopback_imds.requests) > 2


def test_gone_then_answer_succeeds(make_client, loopback_imds, reply, fake_clock):
    loopback_imds.script(PATH, reply(410, {'error': 'Gone'}), reply(410, {'error': 'Gone'}), reply(200, EMPTY_DOCUMENT))
    client = make_client(loopback_imds.endpoint, policy=pinned_policy(retries=1))
    assert client.get_document()[0]['document_incarnation'] == 1
    assert fake_clock.sleeps == [0.5, 1.0]


# --- retry sequences on a scripted transport ------------------------------

def test_throttled_then_answered(make_client, scripted_transport, response, fake_clock):
    transport = scripted_transport([response(429, {'error': 'Too many requests'}),
                                    response(429, {'error': 'Too many requests'}, {'retry-after': '3'}),
                                    response(200, EMPTY_DOCUMENT)])
    client = make_client(transport=transport, policy=pinned_policy(retries=5))
    assert client.get_document()[0]['events'] == []
    assert fake_clock.sleeps == [0.5, 3.0]
    assert [entry[2] for entry in client.attempt_log] == [429, 429, 200]


def test_unparseable_retry_after_falls_back_to_backoff(make_client, scripted_transport, response, fake_clock):
    transport = scripted_transport([response(429, {}, {'retry-after': 'Wed, 21 Oct 2015 07:28:00 GMT'}),
                                    response(200, EMPTY_DOCUMENT)])
    make_client(transport=transport, policy=pinned_policy()).get_document()
    assert fake_clock.sleeps == [0.5]


def test_connection_failures_and_timeouts_are_retried(make_client, scripted_transport, response, fake_clock):
    transport = scripted_transport([ImdsUnreachableError('refused'), ImdsTimeoutError('slow'),
                                    response(200, EMPTY_DOCUMENT)])
    client = make_client(transport=transport, policy=pinned_policy(retries=2))
    client.get_document()
    assert [entry[2] for entry in client.attempt_log] == ['connection failure', 'timeout', 200]
    assert fake_clock.sleeps == [0.5, 1.0]


def test_timeouts_that_persist_end_in_a_timeout_error(make_client, scripted_transport):
    transport = scripted_transport([ImdsTimeoutError('no answer within 10 s')] * 3)
    with pytest.raises(ImdsTimeoutError, match='did not answer to any of 3 attempts') as caught:
        make_client(transport=transport, policy=pinned_policy(retries=2)).get_document()
    # The message tells what each attempt was given, not a blanket "130 s".
    assert 'first request of this VM waited 130 s' in str(caught.value)
    assert 'the others waited at most 10 s each' in str(caught.value)


class HungTransport(object):
    """Accepts every request and never answers: each attempt costs its whole read timeout on the fake clock."""

    def __init__(self, clock):
        self.clock = clock
        self.read_timeouts = []

    def request(self, method, url, headers, body=None, connect_timeout=5.0, read_timeout=10.0):
        self.read_timeouts.append(read_timeout)
        self.clock.advance(read_timeout)
        raise ImdsTimeoutError('no answer from %s within %s s' % (url, read_timeout), url=url)


@pytest.mark.parametrize('timeout, deadline, expected_total', [
    (3, 150, 150.0),   # default deadline: one 130 s first call, then 3 s attempts, all within 150 s
    (3, 10, 10.0),     # the caller's deadline cuts even the first call's allowance
    (10, 400, None),   # without a short deadline the retries (5) end it: 130 + 5 x 10 + backoff
])
def test_a_hung_endpoint_ends_within_the_deadline(make_client, fake_clock, timeout, deadline, expected_total):
    transport = HungTransport(fake_clock)
    client = make_client(transport=transport, timeout=timeout, deadline=deadline, policy=pinned_policy(retries=5))
    started = fake_clock.now
    with pytest.raises(ImdsTimeoutError) as caught:
        client.get_document()
    spent = fake_clock.now - started
    assert spent <= deadline + 1e-6
    if expected_total is not None:
        assert spent == pytest.approx(expected_total, abs=0.6)
    # The long allowance is given to one attempt only.
    assert sum(1 for value in transport.read_timeouts if value > timeout) <= 1
    assert 'deadline is %s s' % deadline in str(caught.value)


def test_a_caller_deadline_bounds_every_operation(make_client, fake_clock):
    transport = HungTransport(fake_clock)
    client = make_client(transport=transport, timeout=10, first_call_spent=True, policy=pinned_policy(retries=5))
    with pytest.raises(ImdsTimeoutError):
        client.approve([FREEZE_ID], deadline=fake_clock.now + 2.5)
    assert transport.read_timeouts == [2.5]


def test_cancelled_stops_retrying_instead_of_spinning(make_client, scripted_transport, response, fake_clock):
    stopping = []
    transport = scripted_transport([response(410, {'error': 'Gone'})] * 50)
    client = make_client(transport=transport, policy=pinned_policy(retries=5), cancelled=lambda: bool(stopping),
                         sleep=stopping.append)
    with pytest.raises(RequestCancelledError, match='caller is stopping'):
        client.approve([FREEZE_ID])
    # One retry slept (the sleep "returned at once" because of the stop), then no more requests.
    assert len(transport.calls) == 2


def test_an_http_error_keeps_headers_and_retry_after(make_client, scripted_transport, response):
    transport = scripted_transport([response(429, {'error': 'Too many requests'}, {'retry-after': '7'})])
    with pytest.raises(ImdsHttpError) as caught:
        make_client(transport=transport, policy=pinned_policy(retries=0)).get_document()
    assert caught.value.headers == {'retry-after': '7'}
    assert caught.value.retry_after == 7.0


def test_ids_differing_only_in_case_are_posted_once(make_client, scripted_transport, response):
    transport = scripted_transport([response(200, {})])
    client = make_client(transport=transport)
    sent = client.approve([FREEZE_ID, FREEZE_ID.lower(), '{%s}' % FREEZE_ID, TERMINATE_ID])
    assert sent == [FREEZE_ID, TERMINATE_ID]
    body = json.loads(transport.calls[0]['body'].decode('utf-8'))
    assert body == {'StartRequests': [{'EventId': FREEZE_ID}, {'EventId': TERMINATE_ID}]}


def test_decoding_warnings_reach_the_normalized_document(make_client, scripted_transport, response):
    transport = scripted_transport([response(200, b'\xef\xbb\xbf{"DocumentIncarnation": 3, "Events": '
                                                  b'[{"EventId": "a", "Description": "caf\xe9"}]}')])
    normalized, raw = make_client(transport=transport).get_document()
    assert normalized['document_incarnation'] == 3
    assert raw['Events'][0]['Description'] == u'caf\ufffd'
    assert any('not UTF-8' in warning for warning in normalized['warnings'])


def test_malformed_documents_are_retried_then_accepted(make_client, scripted_transport, response, fake_clock):
    transport = scripted_transport([response(200, b'<html>proxy</html>'), response(200, {'Events': []}),
                                    response(200, EMPTY_DOCUMENT)])
    client = make_client(transport=transport, policy=pinned_policy(retries=3))
    assert client.get_document()[0]['document_incarnation'] == 1
    assert fake_clock.sleeps == [0.5, 1.0]


def test_malformed_documents_that_persist_name_the_url_and_attempts(make_client, scripted_transport, response):
    transport = scripted_transport([response(200, b'not json')] * 3)
    client = make_client(transport=transport, policy=pinned_policy(retries=2))
    with pytest.raises(MalformedDocumentError) as caught:
        client.get_document()
    assert client.events_url in str(caught.value) and '3 attempts' in str(caught.value)
    assert caught.value.url == client.events_url


def test_deadline_stops_retrying(make_client, scripted_transport, response, fake_clock):
    transport = scripted_transport([response(500, {}), response(500, {}), response(500, {})])
    client = make_client(transport=transport, policy=pinned_policy(retries=5))
    with pytest.raises(ImdsHttpError) as caught:
        client.request('GET', client.events_url, deadline=fake_clock.now + 1.2)
    # 0.5 s fits, the next 1.0 s backoff would end after the deadline.
    assert fake_clock.sleeps == [0.5]
    assert caught.value.status == 500
    assert 'after 2 attempts' in str(caught.value)


def test_first_get_gets_the_long_read_timeout(make_client, scripted_transport, response):
    transport = scripted_transport([ImdsTimeoutError('slow'), response(200, EMPTY_DOCUMENT),
                                    response(200, EMPTY_DOCUMENT), response(200, {})])
    client = make_client(transport=transport, timeout=4, policy=pinned_policy())
    client.get_document()
    client.get_document()
    client.approve([FREEZE_ID])
    timeouts = [call['read_timeout'] for call in transport.calls]
    # The first-call allowance is spent once, on the first attempt, answered or not.
    assert timeouts == [FIRST_CALL_TIMEOUT, 4.0, 4.0, 4.0]
    assert set(call['connect_timeout'] for call in transport.calls) == {4.0}


def test_timeouts_relate_to_each_other():
    assert FIRST_CALL_TIMEOUT >= 120 and CONNECT_TIMEOUT <= 10
    client = ImdsClient(timeout=300)
    assert client.first_call_timeout == 300.0
    assert client.connect_timeout == CONNECT_TIMEOUT
    client = ImdsClient(timeout=1)
    assert client.first_call_timeout == FIRST_CALL_TIMEOUT
    assert client.connect_timeout == 1.0


# --- approving -------------------------------------------------------------

def test_approve_posts_one_start_requests_body(make_client, loopback_imds, reply):
    loopback_imds.script(PATH, reply(200, {}))
    client = make_client(loopback_imds.endpoint)
    client.approve([FREEZE_ID, TERMINATE_ID])
    request = loopback_imds.requests[0]
    assert request.method == 'POST'
    assert request.query == {'api-version': ['2020-07-01']}
    assert request.headers['Metadata'] == 'true'
    assert request.headers['Content-Type'] == 'application/json'
    assert 'X-Forwarded-For' not in request.headers
    assert json.loads(request.body.decode('utf-8')) == {
        'StartRequests': [{'EventId': FREEZE_ID}, {'EventId': TERMINATE_ID}]}


def test_approve_accepts_any_iterable_of_ids(make_client, scripted_transport, response):
    transport = scripted_transport([response(200, {})])
    make_client(transport=transport).approve(event_id for event_id in (FREEZE_ID,))
    assert json.loads(transport.calls[0]['body'].decode('utf-8')) == {'StartRequests': [{'EventId': FREEZE_ID}]}


def test_approve_nothing_is_refused(make_client, scripted_transport):
    transport = scripted_transport([])
    with pytest.raises(InvalidParameterError, match='no event ids'):
        make_client(transport=transport).approve([])
    assert transport.calls == []


def test_approve_refused_says_so(make_client, loopback_imds, reply):
    loopback_imds.script(PATH, reply(400, {'error': 'Bad request. Invalid EventId'}))
    with pytest.raises(ImdsHttpError, match='POST .*Invalid EventId.*check the event ids'):
        make_client(loopback_imds.endpoint).approve(['not-an-id'])


# --- other IMDS paths ------------------------------------------------------

def test_get_json_uses_the_origin_of_the_endpoint(make_client, loopback_imds, reply, fixture_json):
    loopback_imds.script(COMPUTE_PATH, reply(200, fixture_json('compute.json')))
    client = make_client(loopback_imds.endpoint)
    compute = client.get_json(COMPUTE_PATH + '?api-version=2021-02-01')
    assert compute['name'] == 'myScaleSet_3'
    request = loopback_imds.requests[0]
    assert request.path == COMPUTE_PATH and request.headers['Metadata'] == 'true'
    # Reading instance metadata is no Scheduled Events call: the first events call stays patient.
    assert client.first_call_pending is True


def test_get_json_not_json_names_the_url(make_client, loopback_imds, reply):
    loopback_imds.script(COMPUTE_PATH, reply(200, body=b'<html/>'))
    client = make_client(loopback_imds.endpoint, retries=0)
    with pytest.raises(MalformedDocumentError, match=COMPUTE_PATH):
        client.get_json(COMPUTE_PATH)


# --- configuration ---------------------------------------------------------

@pytest.mark.parametrize('endpoint, origin', [
    ('http://169.254.169.254/metadata/scheduledevents', 'http://169.254.169.254:80'),
    ('http://127.0.0.1:18101/metadata/scheduledevents', 'http://127.0.0.1:18101'),
    ('https://relay.example/metadata/scheduledevents', 'https://relay.example:443'),
    ('http://[::1]:8080/metadata/scheduledevents', 'http://[::1]:8080'),
])
def test_origin_of(endpoint, origin):
    assert origin_of(endpoint) == origin


@pytest.mark.parametrize('endpoint', ['', None, 'ftp://x/metadata', 'http://x/metadata/scheduledevents?api-version=1',
                                      'http://x/metadata#frag', 42])
def test_bad_endpoints_are_refused_with_the_default_as_example(endpoint):
    with pytest.raises(InvalidParameterError):
        validate_endpoint(endpoint)
    with pytest.raises(InvalidParameterError):
        ImdsClient(endpoint=endpoint)


@pytest.mark.parametrize('api_version', ['2020-07-01', '2017-03-01', '2021-12-13', '2020-07-01-preview'])
def test_api_versions_of_the_right_shape_pass(api_version):
    assert validate_api_version(api_version) == api_version


@pytest.mark.parametrize('api_version', ['{latest}', 'latest', '2020-7-1', '', None, 20200701, '2020-07-01&x=1'])
def test_other_api_versions_are_refused_listing_the_known_ones(api_version):
    with pytest.raises(InvalidParameterError) as caught:
        ImdsClient(api_version=api_version)
    assert '2020-07-01' in str(caught.value) and '{latest}' in str(caught.value)


@pytest.mark.parametrize('timeout', [0, -1, None, 'ten', float('nan'), float('inf'), True])
def test_bad_timeouts_are_refused(timeout):
    with pytest.raises(InvalidParameterError, match='timeout must be a positive number of seconds'):
        ImdsClient(timeout=timeout)


@pytest.mark.parametrize('retries', [-1, None, 1.5, 'x', True])
def test_bad_retries_are_refused(retries):
    with pytest.raises(InvalidParameterError, match='retries must be a whole number'):
        ImdsClient(retries=retries)


def test_numbers_given_as_text_are_accepted():
    client = ImdsClient(timeout='2.5', retries='3')
    assert client.timeout == 2.5
    assert client.policy.retries == 3


def test_close_releases_the_transport(scripted_transport):
    transport = scripted_transport([])
    ImdsClient(transport=transport).close()
    assert transport.closed == 1


def test_every_core_error_is_a_scheduled_events_error():
    for error_class in (ImdsHttpError, ImdsRedirectError, ImdsTimeoutError, ImdsUnreachableError,
                        InvalidParameterError, MalformedDocumentError):
        assert issubclass(error_class, ScheduledEventsError)


@pytest.mark.parametrize('status, retryable', [(400, False), (404, False), (405, False), (408, False), (410, True),
                                               (429, True), (500, True), (503, True), (None, False)])
def test_http_error_retryable_by_status(status, retryable):
    assert ImdsHttpError('x', status=status).retryable is retryable


@pytest.mark.parametrize('url, expected', [
    ('http://127.0.0.1:1/metadata/scheduledevent?api-version=2020-07-01', 'endpoint must end in /metadata/scheduledevents'),
    ('http://127.0.0.1:1/metadata/instance/compute?api-version=2021-02-01', 'set resource_name'),
])
def test_404_advice_depends_on_the_path(url, expected):
    error = _se_client._http_error('GET', url, 404, b'{"error": "Not found"}', 1)
    assert expected in error.message


def test_attempt_log_stays_bounded():
    client = _se_client.ImdsClient(endpoint='http://127.0.0.1:1/metadata/scheduledevents')
    for number in range(5 * _se_client.ATTEMPT_LOG_SIZE):
        client._record_attempt('GET', 'url', number)
    assert len(client.attempt_log) <= 2 * _se_client.ATTEMPT_LOG_SIZE
    assert client.attempt_log[-1][2] == 5 * _se_client.ATTEMPT_LOG_SIZE - 1


def test_an_endpoint_that_answered_before_is_not_asked_whether_it_is_azure(make_client, fake_clock):
    # After an approval the VM may restart at once; a read that then fails is
    # no sign of a machine outside Azure, and the message must not say so.
    from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_transport import HttpResponse

    class AnswersOnce(object):
        def __init__(self):
            self.calls = 0

        def request(self, method, url, headers, body=None, connect_timeout=5.0, read_timeout=10.0):
            self.calls += 1
            if self.calls == 1:
                return HttpResponse(200, {}, json.dumps({'DocumentIncarnation': 1, 'Events': []}).encode())
            raise ImdsUnreachableError('could not connect to %s (refused)' % url, url=url)

    client = make_client(transport=AnswersOnce(), retries=1, policy=pinned_policy(retries=1))
    client.get_document()
    with pytest.raises(ImdsUnreachableError) as caught:
        client.get_document()
    assert 'Is this an Azure VM?' not in str(caught.value)
    assert 'answered earlier: the VM may be restarting' in str(caught.value)
