# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The webhook client sends its secrets to the configured origin only."""

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from se_service.notify import WebhookNotifier, make_record, origin_of, redirect_target

SECRETS = {'Authorization': 'Bearer s3cret', 'X-Api-Key': 'k3y'}


class Receiver(object):
    """A loopback HTTP server on an ephemeral port that records requests and answers as told."""

    def __init__(self):
        self.requests = []
        self.answer = (200, {})
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self):
                length = int(self.headers.get('Content-Length') or 0)
                receiver.requests.append({'method': self.command, 'path': self.path, 'headers': dict(self.headers),
                                          'body': self.rfile.read(length)})
                status, headers = receiver.answer
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header('Content-Length', '0')
                self.end_headers()

            do_POST = do_GET = _handle

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.url = 'http://127.0.0.1:%d' % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever)
        self.thread.daemon = True
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receivers():
    made = []

    def make():
        made.append(Receiver())
        return made[-1]

    yield make
    for receiver in made:
        receiver.close()


def deliver(url, **options):
    notifier = WebhookNotifier(url, SECRETS, retries=0, timeout=5, logger=logging.getLogger('test'), **options)
    notifier.start()
    notifier.submit(make_record('new', 'vm0'))
    notifier.stop(drain_seconds=15)
    return notifier


def test_a_redirect_is_not_followed_by_default(receivers):
    origin, elsewhere = receivers(), receivers()
    origin.answer = (302, {'Location': elsewhere.url + '/collect'})
    notifier = deliver(origin.url + '/hook')
    assert notifier.failed == 1 and notifier.sent == 0
    assert elsewhere.requests == []


@pytest.mark.parametrize('status', [301, 302, 303, 307, 308])
def test_a_followed_redirect_to_another_origin_carries_no_credentials(receivers, status):
    origin, elsewhere = receivers(), receivers()
    origin.answer = (status, {'Location': elsewhere.url + '/collect'})
    notifier = deliver(origin.url + '/hook', follow_redirects=True)
    assert notifier.sent == 1
    assert origin.requests[0]['headers']['Authorization'] == 'Bearer s3cret'
    forwarded = elsewhere.requests[0]
    assert forwarded['method'] == 'POST' and forwarded['path'] == '/collect' and b'"kind": "new"' in forwarded['body']
    assert 'Authorization' not in forwarded['headers'] and 'X-Api-Key' not in forwarded['headers']


def test_a_followed_redirect_on_the_same_origin_keeps_credentials(receivers):
    origin = receivers()
    answers = [(307, {'Location': '/moved'}), (200, {})]

    class Scripted(object):
        def __getitem__(self, index):
            return answers[min(len(origin.requests) - 1, 1)][index]

    origin.answer = Scripted()
    notifier = deliver(origin.url + '/hook', follow_redirects=True)
    assert notifier.sent == 1
    assert [request['path'] for request in origin.requests] == ['/hook', '/moved']
    assert origin.requests[1]['headers']['X-Api-Key'] == 'k3y'


def test_proxy_variables_are_ignored_unless_a_proxy_is_configured(receivers, monkeypatch):
    target, proxy = receivers(), receivers()
    for name in ('http_proxy', 'HTTP_PROXY', 'https_proxy', 'all_proxy'):
        monkeypatch.setenv(name, proxy.url)
    monkeypatch.delenv('no_proxy', raising=False)
    monkeypatch.delenv('NO_PROXY', raising=False)
    assert deliver(target.url + '/hook').sent == 1
    assert proxy.requests == [] and len(target.requests) == 1
    assert deliver(target.url + '/hook', proxy=proxy.url).sent == 1
    assert proxy.requests[0]['path'] == target.url + '/hook'


@pytest.mark.parametrize('url, location, same', [
    ('https://a.example/x', '/y', True),
    ('https://a.example/x', 'https://A.example:443/y', True),
    ('https://a.example/x', 'http://a.example/y', False),
    ('https://a.example/x', 'https://a.example:8443/y', False),
    ('https://a.example/x', 'https://b.example/y', False),
])
def test_origins_compare_scheme_host_and_port(url, location, same):
    assert redirect_target(url, 302, location, url, 0)[1] is same
    assert (origin_of(url) == origin_of(redirect_target(url, 302, location, url, 0)[0])) is same


@pytest.mark.parametrize('location, hops, message', [
    ('file:///etc/passwd', 0, 'non-HTTP'),
    ('/y', 5, 'more than 5 redirects'),
    (None, 0, 'without a usable Location'),
])
def test_unfollowable_redirects_are_refused(location, hops, message):
    with pytest.raises(ValueError, match=message):
        redirect_target('https://a.example/x', 302, location, 'https://a.example/x', hops)


def test_a_failed_delivery_logs_the_origin_not_a_token_in_the_path(receivers, caplog):
    # Many receivers (Slack, Teams, ...) carry their token in the URL's path.
    receiver = receivers()
    receiver.answer = (500, {})
    with caplog.at_level(logging.WARNING, logger='test'):
        notifier = deliver(receiver.url + '/services/T0001/B0001/SuperSecretToken123?sig=abc')
    assert notifier.failed == 1
    assert 'did not accept' in caplog.text and receiver.url + '/...' in caplog.text
    assert 'SuperSecretToken123' not in caplog.text and 'sig=abc' not in caplog.text
