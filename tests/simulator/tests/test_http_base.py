"""The listeners' serving loop: asleep until a connection comes or the listener is closed."""

import http.client
import selectors

from imds_simulator import http_base


class _Hello(http_base.JsonRequestHandler):
    def do_GET(self):
        body = b'{"hello": true}'
        self.send_response(200)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _RecordingSelector(selectors.DefaultSelector):
    """The selector of the serving loop, noting the timeout of every wait."""

    timeouts = []

    def select(self, timeout=None):
        self.timeouts.append(timeout)
        return super().select(timeout)


def test_a_listener_waits_without_a_timeout_and_close_all_stops_it(monkeypatch):
    monkeypatch.setattr(_RecordingSelector, 'timeouts', [])
    monkeypatch.setattr(http_base.selectors, 'DefaultSelector', _RecordingSelector)
    server = http_base.open_server(('127.0.0.1', 0), _Hello, owner=None)
    try:
        connection = http.client.HTTPConnection(*server.bound_address, timeout=10)
        connection.request('GET', '/')
        assert connection.getresponse().read() == b'{"hello": true}'
    finally:
        server.close_all()
    server.close_all()
    # No wait with a timeout: an idle listener never wakes up by itself.
    assert _RecordingSelector.timeouts and set(_RecordingSelector.timeouts) == {None}
    assert not server.thread.is_alive()
    # The port no longer answers.
    connection.close()
    fresh = http.client.HTTPConnection(*server.bound_address, timeout=10)
    try:
        fresh.request('GET', '/')
        fresh.getresponse()
    except OSError:
        pass
    else:
        raise AssertionError('the closed listener still answered')
    finally:
        fresh.close()
