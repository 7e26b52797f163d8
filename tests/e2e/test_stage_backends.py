# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The e2e stage's backends model maintenance faithfully, overlapping impacts included.

A backend wrongly left down after its impacts ended would fail the rolling
playbook's verify step and look like a bug of the collection (it did once: a
User reboot during a Freeze on the same VM left the backend down for good).
"""

import urllib.error
import urllib.request

import pytest

from stage.backends import BackendFleet


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
