# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The stdlib HTTP transport, against a loopback server."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import http.client as http_client
import socket
import time

import pytest

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import (
    ImdsTimeoutError,
    ImdsUnreachableError,
    InvalidParameterError,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_transport import (
    HttpClientTransport,
    split_origin,
)

PATH = '/metadata/scheduledevents'
HEADERS = {'Metadata': 'true'}


@pytest.fixture
def transport():
    transport = HttpClientTransport()
    try:
        yield transport
    finally:
        transport.close()


@pytest.mark.parametrize('url, expected', [
    ('http://169.254.169.254/metadata/scheduledevents?api-version=2020-07-01',
     ('http', '169.254.169.254', 80, '/metadata/scheduledevents?api-version=2020-07-01')),
    ('https://imds.example/x', ('https', 'imds.example', 443, '/x')),
    ('http://127.0.0.1:18101', ('http', '127.0.0.1', 18101, '/')),
    ('http://[::1]:8080/metadata', ('http', '::1', 8080, '/metadata')),
])
def test_split_origin(url, expected):
    assert split_origin(url) == expected


@pytest.mark.parametrize('url', ['ftp://host/x', '169.254.169.254/metadata', 'http://', 'http://host:99999/x',
                                 'http://host:port/x', ''])
def test_split_origin_refuses_what_is_no_http_url(url):
    with pytest.raises(InvalidParameterError):
        split_origin(url)


def test_answer_is_returned_with_lower_case_headers(transport, loopback_imds, reply):
    loopback_imds.script(PATH, reply(503, {'error': 'busy'}, headers={'Retry-After': '2'}))
    answer = transport.request('GET', loopback_imds.endpoint + '?api-version=2020-07-01', HEADERS)
    assert answer.status == 503
    assert answer.headers['retry-after'] == '2'
    assert answer.body == b'{"error": "busy"}'


def test_body_and_headers_are_sent(transport, loopback_imds, reply):
    loopback_imds.script(PATH, reply(200, {}))
    transport.request('POST', loopback_imds.endpoint, {'Metadata': 'true', 'Content-Type': 'application/json'},
                      body=b'{"StartRequests": []}')
    received = loopback_imds.requests[0]
    assert received.method == 'POST'
    assert received.body == b'{"StartRequests": []}'
    assert received.headers['Metadata'] == 'true'
    # The request line carries a path, never an absolute URL as sent to a proxy.
    assert received.target == PATH


def test_keep_alive_reuses_one_connection(transport, loopback_imds, reply):
    loopback_imds.script(PATH, reply(200, {'DocumentIncarnation': 1, 'Events': []}))
    for dummy in range(4):
        assert transport.request('GET', loopback_imds.endpoint, HEADERS).status == 200
    assert len(loopback_imds.requests) == 4
    assert len(set(request.peer for request in loopback_imds.requests)) == 1


def test_connection_closed_by_the_server_is_reopened_once(transport, loopback_imds, reply):
    loopback_imds.script(PATH, reply(200, {'first': True}, close_after=True), reply(200, {'second': True}))
    assert transport.request('GET', loopback_imds.endpoint, HEADERS).body == b'{"first": true}'
    # Let the server's close reach this side, as it would between two polls.
    time.sleep(0.05)
    assert transport.request('GET', loopback_imds.endpoint, HEADERS).body == b'{"second": true}'
    assert len(loopback_imds.requests) == 2
    assert loopback_imds.requests[0].peer != loopback_imds.requests[1].peer


def test_connection_close_header_is_honoured(transport, loopback_imds, reply):
    loopback_imds.script(PATH, reply(200, {}, headers={'Connection': 'close'}))
    transport.request('GET', loopback_imds.endpoint, HEADERS)
    transport.request('GET', loopback_imds.endpoint, HEADERS)
    assert loopback_imds.requests[0].peer != loopback_imds.requests[1].peer


def test_new_origin_gets_a_new_connection(transport, reply, loopback_imds):
    loopback_imds.script(PATH, reply(200, {}))
    transport.request('GET', loopback_imds.endpoint, HEADERS)
    other = loopback_imds.endpoint.replace('127.0.0.1', 'localhost')
    try:
        transport.request('GET', other, HEADERS)
    except ImdsUnreachableError:
        pytest.skip('localhost does not resolve to 127.0.0.1 here')
    assert loopback_imds.requests[0].peer != loopback_imds.requests[1].peer


def test_fresh_connection_closed_without_answer_is_unreachable(transport, loopback_imds, reply):
    loopback_imds.script(PATH, reply(drop=True))
    with pytest.raises(ImdsUnreachableError, match='closed without an answer') as caught:
        transport.request('GET', loopback_imds.endpoint, HEADERS)
    assert not isinstance(caught.value, ImdsTimeoutError)
    assert len(loopback_imds.requests) == 1


def test_kept_connection_that_keeps_dropping_is_retried_only_once(transport, loopback_imds, reply):
    loopback_imds.script(PATH, reply(200, {}), reply(drop=True))
    transport.request('GET', loopback_imds.endpoint, HEADERS)
    with pytest.raises(ImdsUnreachableError, match='closed without an answer'):
        transport.request('GET', loopback_imds.endpoint, HEADERS)
    assert len(loopback_imds.requests) == 3


def test_slow_answer_is_a_timeout_and_the_connection_is_dropped(transport, loopback_imds, reply):
    # The answer comes after 0.5 s, so only the read timeout makes this raise.
    loopback_imds.script(PATH, reply(200, {}, delay=0.5), reply(200, {'late': False}))
    with pytest.raises(ImdsTimeoutError, match='no answer from .* within 0.1 s'):
        transport.request('GET', loopback_imds.endpoint, HEADERS, read_timeout=0.1)
    # The late answer must not be read as the answer to the next request.
    assert transport.request('GET', loopback_imds.endpoint, HEADERS, read_timeout=2.0).body == b'{"late": false}'


def test_read_timeout_is_separate_from_connect_timeout(transport, loopback_imds, reply):
    loopback_imds.script(PATH, reply(200, {'slow': True}, delay=0.3))
    answer = transport.request('GET', loopback_imds.endpoint, HEADERS, connect_timeout=0.1, read_timeout=2.0)
    assert answer.body == b'{"slow": true}'


def test_refused_connection_fails_fast(transport, closed_port):
    started = time.monotonic()
    with pytest.raises(ImdsUnreachableError, match='could not connect to') as caught:
        transport.request('GET', 'http://127.0.0.1:%d%s' % (closed_port, PATH), HEADERS, connect_timeout=30.0)
    # Not the connect timeout: a refusal is final at once. A third of it
    # leaves a busy machine all the room it needs.
    assert time.monotonic() - started < 10.0
    assert not isinstance(caught.value, ImdsTimeoutError)
    assert caught.value.url.startswith('http://127.0.0.1:%d' % closed_port)


def test_connect_timeout_is_unreachable_not_read_timeout(transport, monkeypatch):
    seen = {}

    def connect_that_times_out(self):
        seen['timeout'] = self.timeout
        raise socket.timeout('timed out')

    monkeypatch.setattr(http_client.HTTPConnection, 'connect', connect_that_times_out)
    with pytest.raises(ImdsUnreachableError, match='could not connect to .* within 0.25 s') as caught:
        transport.request('GET', 'http://169.254.169.254' + PATH, HEADERS, connect_timeout=0.25, read_timeout=130.0)
    assert not isinstance(caught.value, ImdsTimeoutError)
    assert seen['timeout'] == 0.25


def test_proxy_settings_are_never_used(transport, loopback_imds, reply, trap_listener, monkeypatch):
    trap_port, trap_was_connected = trap_listener
    proxy = 'http://127.0.0.1:%d' % trap_port
    for name in ('HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'ALL_PROXY', 'all_proxy'):
        monkeypatch.setenv(name, proxy)
    monkeypatch.delenv('NO_PROXY', raising=False)
    monkeypatch.delenv('no_proxy', raising=False)
    loopback_imds.script(PATH, reply(200, {}))
    assert transport.request('GET', loopback_imds.endpoint, HEADERS).status == 200
    assert loopback_imds.requests[0].target == PATH
    assert not trap_was_connected()


def test_redirects_are_returned_not_followed(transport, loopback_imds, reply):
    loopback_imds.script(PATH, reply(302, {}, headers={'Location': loopback_imds.origin + '/elsewhere'}))
    answer = transport.request('GET', loopback_imds.endpoint, HEADERS)
    assert answer.status == 302
    assert answer.headers['location'].endswith('/elsewhere')
    assert [request.path for request in loopback_imds.requests] == [PATH]


def test_close_is_idempotent(transport, loopback_imds, reply):
    loopback_imds.script(PATH, reply(200, {}))
    transport.request('GET', loopback_imds.endpoint, HEADERS)
    transport.close()
    transport.close()
    assert transport.request('GET', loopback_imds.endpoint, HEADERS).status == 200


def test_invalid_url_is_a_parameter_error(transport):
    with pytest.raises(InvalidParameterError):
        transport.request('GET', 'file:///etc/passwd', HEADERS)


@pytest.mark.parametrize('chunked', [False, True])
def test_an_answer_that_trickles_in_is_a_timeout(transport, chunked):
    # Each byte comes well within the read time-out, the whole answer never
    # does: a per-read time-out alone would keep the request alive for as
    # long as the server likes (here 400 bytes, 20 s).
    import threading

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(('127.0.0.1', 0))
    listener.listen(1)
    listener.settimeout(10)
    stop = threading.Event()

    def serve():
        conn, dummy = listener.accept()
        with conn:
            conn.recv(65536)
            framing = b'Transfer-Encoding: chunked' if chunked else b'Content-Length: 400'
            conn.sendall(b'HTTP/1.1 200 OK\r\n' + framing + b'\r\n\r\n')
            for dummy in range(400):
                if stop.wait(0.05):
                    return
                try:
                    conn.sendall(b'1\r\n \r\n' if chunked else b' ')
                except OSError:
                    return

    server = threading.Thread(target=serve)
    server.start()
    try:
        url = 'http://127.0.0.1:%d%s' % (listener.getsockname()[1], PATH)
        with pytest.raises(ImdsTimeoutError, match='within 0.5 s'):
            transport.request('GET', url, HEADERS, read_timeout=0.5)
    finally:
        stop.set()
        server.join(30)
        listener.close()
