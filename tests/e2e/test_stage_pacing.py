# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The e2e stage's clock waits for an impact to reach the stage before it runs on.

The simulator starts an event's impact by running a command (here a Python
process that tells the backend fleet); on a busy machine that took 2.5 s,
which at the stage's speed was most of a Freeze, so the backend was frozen
too briefly for any request to time out, and the run without draining could
not show that undrained impacts fail requests. ``pace_clock_while`` holds the
simulated clock until the command has exited, so a backend stays out for the
impact's whole length, however long its command takes to start.
"""

import threading

import pytest

from stage.rolling_stage import RollingStage, impact_starts_running
from imds_simulator.control_client import imds_get  # on sys.path once stage.rolling_stage is imported

SPEED = 2.0
# Simulated seconds of the Freeze: 8 s of real time at SPEED.
IMPACT_SECONDS = 16
# Real seconds the impact command takes before it starts an impact, longer
# than the whole impact: without the hold, the impact would be over in
# simulated time before it began in the stage.
START_DELAY_SECONDS = 9
# Real seconds the pacer may take to see the event start, at most, on a busy
# machine; the clock runs at SPEED meanwhile.
NOTICE_SECONDS = 2


def record(event_id='E-1', phase='start', exit_code=None, error=None):
    return {'event_id': event_id, 'phase': phase, 'vm': 'web_0', 'exit_code': exit_code, 'error': error}


@pytest.mark.parametrize('impacts, expected', [
    # Running, or waiting for the VM's earlier command: not started yet.
    ([record()], ['e-1']),
    # Exited, whether it worked or not, or never run: done.
    ([record(exit_code=0)], []),
    ([record(exit_code=1)], []),
    ([record(error='not run: the simulator was reset first')], []),
    # One VM's command still running keeps the event.
    ([record(exit_code=0), record()], ['e-1']),
    # An end command, or another event's start, is not what the clock waits for.
    ([record(phase='end')], []),
    ([record(event_id='E-2')], []),
    ([], []),
])
def test_impact_starts_running(impacts, expected):
    assert impact_starts_running(impacts, ['E-1']) == expected


class SlowImpactStage(RollingStage):
    """A stage whose impact command waits START_DELAY_SECONDS before it starts an impact (not before it ends one)."""

    def impact_command(self, admin_url):
        # $0 is the interpreter, $1 the hook, $2 the admin address, $3 the phase.
        return ['/bin/sh', '-c', 'if [ "$3" = start ]; then sleep %d; fi; exec "$0" "$@"' % START_DELAY_SECONDS] \
            + super().impact_command(admin_url)


def test_a_freeze_keeps_its_backend_frozen_for_its_whole_length_however_slow_its_command(tmp_path):
    with SlowImpactStage(str(tmp_path), speed=SPEED, with_haproxy=False) as stage:
        port = dict((vm, port) for vm, _group, _avset, _domain, port in stage.vms)['web_0']
        event_id = stage.control.create_event('Freeze', ['web_0'], duration_seconds=IMPACT_SECONDS,
                                              impact_seconds=IMPACT_SECONDS, linger_seconds=600)
        done = threading.Event()

        def impacts_on_web_0():
            """{phase: real time} of what the event did to web_0's backend so far."""
            return dict((entry['phase'], entry['time']) for entry in stage.fleet.impact_log()
                        if entry['event_id'].lower() == event_id.lower() and entry['vm'] == 'web_0')

        def read_as_the_vm():
            # What the playbook's rounds would do: the pacer holds the clock until the VM has read the event.
            while not done.wait(0.3):
                imds_get('http://127.0.0.1:%d' % port)

        reader = threading.Thread(target=read_as_the_vm, daemon=True)
        reader.start()
        try:
            stage.control.start_event(event_id)
            held = stage.pace_clock_while(lambda: 'end' not in impacts_on_web_0(), timeout=120)
        finally:
            done.set()
            reader.join(15)

        assert [held_id.lower() for held_id in held] == [event_id.lower()]
        times = impacts_on_web_0()
        assert set(times) == {'start', 'end'}, stage.fleet.impact_log()
        # The whole impact in real time, but what passed before the pacer saw the event start.
        assert times['end'] - times['start'] >= IMPACT_SECONDS / SPEED - NOTICE_SECONDS, times
