# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The e2e stage's backends model maintenance faithfully, overlapping impacts included, and count the
requests a freeze held; the load generator tells failures apart by kind.

A backend wrongly left down after its impacts ended would fail the rolling
playbook's verify step and look like a bug of the collection (it did once: a
User reboot during a Freeze on the same VM left the backend down for good).
"""

import threading
import time
import urllib.error
import urllib.request

import pytest

from stage.backends import BackendFleet
from stage.load import TIME_OUT, failure_kind


@pytest.fixture
def fleet():
    started = BackendFleet('127.0.0.1')
    started.add('api_1')
    yield started
    started.stop()


def answer(backend):
    """'answers', 'refused' (down) or 'hangs' (frozen)."""
    try:
        with urllib.request.urlopen(backend.url + '/', timeout=1) as response:
            response.read()
        return 'answers'
    except urllib.error.URLError as exc:
        return 'hangs' if isinstance(exc.reason, TimeoutError) else 'refused'
    except TimeoutError:
        return 'hangs'


@pytest.mark.parametrize('steps', [
    # A reboot, and a freeze that starts and ends inside it.
    [('start', 'Reboot', 'R'), ('start', 'Freeze', 'F'), ('end', 'Freeze', 'F'), ('end', 'Reboot', 'R')],
    # A freeze, and a reboot that outlasts it.
    [('start', 'Freeze', 'F'), ('start', 'Reboot', 'R'), ('end', 'Freeze', 'F'), ('end', 'Reboot', 'R')],
    # A reboot that ends first, inside a longer freeze.
    [('start', 'Freeze', 'F'), ('start', 'Reboot', 'R'), ('end', 'Reboot', 'R'), ('end', 'Freeze', 'F')],
])
def test_down_while_a_restart_runs_frozen_while_only_a_freeze_runs_up_after_the_last(fleet, steps):
    backend = fleet.backends['api_1']
    running = {}
    for phase, event_type, event_id in steps:
        fleet.impact(phase, 'api_1', event_type, event_id)
        if phase == 'start':
            running[event_id] = event_type
        else:
            running.pop(event_id)
        expected = 'refused' if set(running.values()) - {'Freeze'} else ('hangs' if running else 'answers')
        assert answer(backend) == expected, (phase, event_type, event_id)
    assert backend.state == 'up'


def request_in_background(url):
    """Send a GET to ``url`` in a thread (a frozen backend holds it); the thread, to join."""
    def fetch():
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                response.read()
        except OSError:
            pass
    thread = threading.Thread(target=fetch, daemon=True)
    thread.start()
    return thread


def test_a_freeze_counts_the_requests_of_the_service_it_held_but_not_health_checks(fleet):
    backend = fleet.backends['api_1']
    assert answer(backend) == 'answers'
    fleet.impact('start', 'api_1', 'Freeze', 'F')
    held = [request_in_background(backend.url + '/'), request_in_background(backend.url + '/api/orders'),
            request_in_background(backend.url + '/health')]
    deadline = time.monotonic() + 20
    while backend.waiting_while_frozen < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert backend.waiting_while_frozen == 3
    fleet.impact('end', 'api_1', 'Freeze', 'F')
    for thread in held:
        thread.join(30)
    assert fleet.held_by_freeze() == {'api_1': 2}
    # Answered up, a request is not counted.
    assert answer(backend) == 'answers'
    assert fleet.held_by_freeze() == {'api_1': 2}


def test_no_held_request_without_a_freeze(fleet):
    fleet.impact('start', 'api_1', 'Reboot', 'R')
    assert answer(fleet.backends['api_1']) == 'refused'
    fleet.impact('end', 'api_1', 'Reboot', 'R')
    assert answer(fleet.backends['api_1']) == 'answers'
    assert fleet.held_by_freeze() == {}


@pytest.mark.parametrize('status, error, kind', [
    (504, 'Gateway Time-out', TIME_OUT),
    (None, 'TimeoutError: timed out', TIME_OUT),
    (503, 'Service Unavailable', 'status 503'),
    (502, 'Bad Gateway', 'status 502'),
    (None, 'ConnectionRefusedError: [Errno 111] Connection refused', 'ConnectionRefusedError'),
    (None, None, 'error'),
])
def test_failures_are_told_apart_by_kind(status, error, kind):
    assert failure_kind(status, error) == kind
