# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The metrics listener: idle clients wedge nothing, a taken port is said clearly."""

import socket
import struct
import threading
import time
import urllib.request

import pytest

from se_service.metrics import MetricsListenError, Metrics, MetricsServer, check_listen_address

# Upper bound of any wait here, so a regression fails instead of hanging.
LIMIT_SECONDS = 20


@pytest.fixture
def server():
    metrics = Metrics()
    metrics.add('polls_total', 3)
    running = MetricsServer(metrics, '127.0.0.1', 0)
    running.start()
    yield running
    running.stop()


def scrape(address):
    with urllib.request.urlopen('http://%s:%d/metrics' % address, timeout=LIMIT_SECONDS) as response:
        return response.read().decode('utf-8')


def test_an_idle_connection_does_not_block_scrapes_or_stop(server):
    idle = socket.create_connection(server.address, timeout=LIMIT_SECONDS)
    half = socket.create_connection(server.address, timeout=LIMIT_SECONDS)
    half.sendall(b'GET /metrics HTTP/1.1\r\n')  # and never the rest
    try:
        assert 'scheduled_events_service_polls_total 3' in scrape(server.address)
        stopper = threading.Thread(target=server.stop)
        stopper.start()
        stopper.join(LIMIT_SECONDS)
        assert not stopper.is_alive(), 'stop() hung on an idle connection'
    finally:
        idle.close()
        half.close()


class HeldRender(Metrics):
    """Metrics whose rendering waits until the test lets it go, so the scraper can hang up first."""

    def __init__(self):
        super().__init__()
        self.asked = threading.Event()
        self.go_on = threading.Event()

    def render(self):
        self.asked.set()
        self.go_on.wait(LIMIT_SECONDS)
        return super().render()


def test_a_scraper_that_hangs_up_before_the_answer_leaves_no_traceback(capfd):
    # A scraper's own time-out (Prometheus' scrape_timeout) closes the
    # connection while the answer is being made; the service must not write a
    # traceback into its journal for that, and must go on serving.
    metrics = HeldRender()
    metrics.add('polls_total', 3)
    running = MetricsServer(metrics, '127.0.0.1', 0)
    running.start()
    try:
        scraper = socket.create_connection(running.address, timeout=LIMIT_SECONDS)
        scraper.sendall(b'GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n')
        assert metrics.asked.wait(LIMIT_SECONDS), 'the scrape never reached the metrics'
        # Closed with a reset, as a client that gives up does: the answer's write fails at once.
        scraper.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
        scraper.close()
        metrics.go_on.set()
        assert 'scheduled_events_service_polls_total 3' in scrape(running.address)
        # A connection's thread reports any error before it ends; stop() does not wait for it.
        deadline = time.monotonic() + LIMIT_SECONDS
        while time.monotonic() < deadline and any(
                'process_request_thread' in thread.name and thread.is_alive() for thread in threading.enumerate()):
            time.sleep(0.05)
    finally:
        metrics.go_on.set()
        running.stop()
    written = capfd.readouterr()
    assert 'Traceback' not in written.err + written.out, written.err


def test_a_port_held_by_another_program_is_refused_clearly():
    holder = socket.socket()
    holder.bind(('127.0.0.1', 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        with pytest.raises(MetricsListenError, match=r'127\.0\.0\.1:%d is already in use by another program' % port):
            check_listen_address('127.0.0.1', port)
        with pytest.raises(MetricsListenError, match='already in use'):
            MetricsServer(Metrics(), '127.0.0.1', port)
    finally:
        holder.close()


def test_a_port_held_by_a_running_instance_of_the_service_passes_the_check(server):
    # The role runs --check on a new configuration while the service runs.
    check_listen_address(*server.address)


def test_a_free_port_passes_the_check():
    # The check binds the port itself, so it must be free: the kernel picks
    # one, and only when another program took it meanwhile (the check says
    # so) is it tried again with a new one, a bounded number of times.
    for dummy in range(5):
        probe = socket.socket()
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
        probe.close()
        try:
            check_listen_address('127.0.0.1', port)
            return
        except MetricsListenError as exc:
            if 'already in use by another program' not in str(exc):
                raise
    pytest.fail('every port the kernel picked was taken before the check in 5 tries')
