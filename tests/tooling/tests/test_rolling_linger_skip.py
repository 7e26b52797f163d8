# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""When the rolling harness may move the simulated clock: past the time handled events stay in the document, and past
the rest of a restart a round has seen."""

import os
import sys

import pytest

ROLLING_TESTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                 'rolling')
if ROLLING_TESTS_DIR not in sys.path:
    sys.path.insert(0, ROLLING_TESTS_DIR)

from rolling_harness import (  # noqa: E402 pylint: disable=wrong-import-position
    LINGER_SKIP_MARGIN, hosts_without_answer, linger_to_skip, linger_to_skip_once_read, restart_to_skip,
    scenario_steps_due)
from imds_simulator.clock import format_iso  # noqa: E402 pylint: disable=wrong-import-position,wrong-import-order

NOW = 1_000_000.0
MANAGED = {'web_0': 'host-web-0', 'web_1': 'host-web-1', 'spot_0': 'host-spot-0'}


def event(status='Started', kind='Freeze', resources=('web_0',), impact_ends=-5.0, removes=30.0, not_before=None):
    return {'id': 'E-%s-%s' % (kind, '-'.join(resources)), 'status': status, 'type': kind,
            'resources': list(resources), 'impact_ends_at': format_iso(NOW + impact_ends), 'removes_at': format_iso(NOW + removes),
            'not_before': None if not_before is None else format_iso(NOW + not_before)}


ENDED = [(1.0, 2.0, 'web_0', 'e')]
BACK = {'host-web-0': 'undrain', 'host-web-1': 'undrain'}


@pytest.mark.parametrize('events, impacts, last_steps, expected', [
    # The run is done with the only event: jump to just past its removal.
    ([event()], ENDED, BACK, 30.0),
    # Two lingering events: only as far as the first to leave.
    ([event(removes=50.0), event(resources=('web_1',), removes=20.0)], ENDED, BACK, 20.0),
    # Past its removal already (the simulator has not ticked): just the margin.
    ([event(removes=-1.0)], ENDED, BACK, 0.0),
    # Nothing in the document: nothing to skip.
    ([], ENDED, BACK, None),
    # Left the document already: not lingering.
    ([event(status='Removed')], ENDED, BACK, None),
    # Another event is still Scheduled: a jump could carry it past its NotBefore.
    ([event(), event(status='Scheduled', resources=('web_1',))], ENDED, BACK, None),
    # Its impact has not ended in simulated time, or its end has not been logged.
    ([event(impact_ends=3.0)], ENDED, BACK, None),
    ([event()], ENDED + [(3.0, None, 'web_0', 'e')], BACK, None),
    # A host of the event is still drained (it may wait for the event to leave), or never drained.
    ([event(resources=('web_0', 'web_1'))], ENDED, {'host-web-0': 'undrain', 'host-web-1': 'verify'}, None),
    ([event(resources=('web_0', 'web_1'))], ENDED, {'host-web-0': 'undrain'}, None),
    # A VM outside the inventory has no host to wait for.
    ([event(resources=('web_0', 'partner_0'))], ENDED, BACK, 30.0),
    # A Preempt deletes its VM: its host stays drained, and that is the end of it.
    ([event(kind='Preempt', resources=('spot_0',))], ENDED, {'host-spot-0': 'drain'}, 30.0),
    ([event(kind='Reboot', resources=('spot_0',))], ENDED, {'host-spot-0': 'drain'}, None),
])
def test_linger_to_skip(events, impacts, last_steps, expected):
    seconds = linger_to_skip(events, NOW, impacts, last_steps, MANAGED)
    if expected is None:
        assert seconds is None
    else:
        assert seconds == pytest.approx(expected + LINGER_SKIP_MARGIN, abs=0.01)


def restart(resources=('web_0',), impact_ends=15.0, kind='Reboot'):
    return event(kind=kind, resources=resources, impact_ends=impact_ends, removes=600.0)


DRAINED = {'host-web-0': 'drain', 'host-web-1': 'drain'}
SEEN = {'host-web-0', 'host-web-1'}


@pytest.mark.parametrize('events, seen_down, last_steps, due, expected', [
    # A round saw the drained host down: jump to just past the end of its restart.
    ([restart()], SEEN, DRAINED, (), 15.0),
    ([restart(kind='Redeploy')], SEEN, DRAINED, (), 15.0),
    # Two restarts: only as far as the first to end.
    ([restart(impact_ends=40.0), restart(resources=('web_1',), impact_ends=10.0)], SEEN, DRAINED, (), 10.0),
    # No round has said the host is down yet (the planner has not seen the restart begin).
    ([restart()], {'host-web-1'}, DRAINED, (), None),
    ([restart(resources=('web_0', 'web_1'))], {'host-web-0'}, DRAINED, (), None),
    # The host is not drained (an impact the run may be asked about), or not in the inventory.
    ([restart()], SEEN, {'host-web-0': 'undrain'}, (), None),
    ([restart()], SEEN, {}, (), None),
    ([restart(resources=('web_0', 'partner_0'))], SEEN, DRAINED, (), None),
    # Another impact on a host that is not drained keeps the clock too; one on a drained host does not.
    ([restart(), event(resources=('web_1',), impact_ends=5.0)], SEEN, {'host-web-0': 'drain'}, (), None),
    ([restart(), event(resources=('web_1',), impact_ends=5.0, removes=600.0)], SEEN, DRAINED, (), 15.0),
    # No restart in progress: a Freeze's impact ends on its own, and an ended restart has nothing to skip.
    ([event(impact_ends=5.0, removes=600.0)], SEEN, DRAINED, (), None),
    ([restart(impact_ends=-1.0)], SEEN, DRAINED, (), None),
    # A NotBefore or a scenario step within the clearance after the jump; a removal within the jump.
    ([restart(), event(status='Scheduled', resources=('web_1',), not_before=70.0)], SEEN, DRAINED, (), None),
    ([restart(), event(status='Scheduled', resources=('web_1',), not_before=900.0)], SEEN, DRAINED, (), 15.0),
    ([restart(), event(status='Scheduled', resources=('web_1',))], SEEN, DRAINED, (), None),
    ([restart(), event(resources=('web_1',), removes=15.0)], SEEN, DRAINED, (), None),
    ([restart(), event(resources=('web_1',), removes=50.0)], SEEN, DRAINED, (), 15.0),
    ([restart()], SEEN, DRAINED, (NOW + 70.0,), None),
    ([restart()], SEEN, DRAINED, (NOW + 900.0,), 15.0),
])
def test_restart_to_skip(events, seen_down, last_steps, due, expected):
    seconds = restart_to_skip(events, NOW, seen_down, last_steps, MANAGED, due=due)
    if expected is None:
        assert seconds is None
    else:
        assert seconds == pytest.approx(expected + LINGER_SKIP_MARGIN, abs=0.01)


def test_the_hosts_a_round_says_did_not_answer():
    lines = ['    "msg": [', '        "round 3, no answer from host-db-0, host_web.1",', '        "round 4",',
             '        "round 5, no answer from host-web-2"', 'no answer from host-x']
    assert hosts_without_answer(lines) == {'host-db-0', 'host_web.1', 'host-web-2'}


def test_the_scenario_steps_still_to_come_at_a_time_of_their_own():
    scenario = {'started_at': format_iso(NOW), 'steps': [
        {'done': True, 'at_seconds': 0}, {'done': False, 'at_seconds': 60},
        {'done': False, 'at_seconds': None, 'after_removed': 'first'}]}
    assert scenario_steps_due(scenario) == [pytest.approx(NOW + 60)]
    assert scenario_steps_due(None) == []


READ = {'E-Freeze-web_0', 'E-Reboot-web_1'}


@pytest.mark.parametrize('events, impacts, read_started, expected', [
    # Every event read Started by a round, impacts over: jump to just past the first removal, the hosts still
    # drained (they wait for their event to leave).
    ([event()], ENDED, READ, 30.0),
    ([event(removes=50.0), event(kind='Reboot', resources=('web_1',), removes=20.0)], ENDED, READ, 20.0),
    # An event no round has read Started yet: its leaving would look like a cancellation.
    ([event(), event(kind='Reboot', resources=('web_1',))], ENDED, {'E-Freeze-web_0'}, None),
    # An event of VMs outside the inventory is not the run's to read.
    ([event(), event(resources=('partner_0',))], ENDED, READ, 30.0),
    # As for linger_to_skip: something Scheduled, an impact going on, nothing in the document.
    ([event(), event(status='Scheduled', resources=('web_1',))], ENDED, READ, None),
    ([event(impact_ends=3.0)], ENDED, READ, None),
    ([event()], ENDED + [(3.0, None, 'web_0', 'e')], READ, None),
    ([], ENDED, READ, None),
])
def test_linger_to_skip_once_read(events, impacts, read_started, expected):
    seconds = linger_to_skip_once_read(events, NOW, impacts, read_started, set(MANAGED))
    assert seconds == (None if expected is None else expected + LINGER_SKIP_MARGIN)


# What a stage that passes a clearance (simulated seconds) allows: a Scheduled event whose NotBefore comes that long
# after the jump (here 30.5 s) no longer holds the clock; one sooner, or without a NotBefore, still does.
CLEARANCE = 100.0


@pytest.mark.parametrize('events, due, read_started, expected', [
    ([event(), event(status='Scheduled', resources=('web_1', 'partner_0'), not_before=200.0)], (), READ, 30.0),
    # The NotBefore within the jump and the clearance, or on its edge; or none.
    ([event(), event(status='Scheduled', resources=('web_1',), not_before=120.0)], (), READ, None),
    ([event(), event(status='Scheduled', resources=('web_1',), not_before=130.5)], (), READ, None),
    ([event(), event(status='Scheduled', resources=('web_1',))], (), READ, None),
    # A scenario step due within them.
    ([event(), event(status='Scheduled', resources=('web_1',), not_before=200.0)], (NOW + 100.0,), READ, None),
    ([event()], (NOW + 200.0,), READ, 30.0),
    # Nothing lingers, only Scheduled events: nothing to skip.
    ([event(status='Scheduled', not_before=200.0)], (), READ, None),
    # Every other rule still holds: a Started event no round has read keeps the clock.
    ([event(), event(kind='Reboot', resources=('web_1',)), event(status='Scheduled', resources=('web_1',), not_before=900.0)],
     (), {'E-Freeze-web_0'}, None),
])
def test_linger_to_skip_once_read_with_a_clearance_for_scheduled_events(events, due, read_started, expected):
    seconds = linger_to_skip_once_read(events, NOW, ENDED, read_started, set(MANAGED), clearance=CLEARANCE, due=due)
    assert seconds == (None if expected is None else expected + LINGER_SKIP_MARGIN)


# An event naming a VM outside the inventory waits for its NotBefore (the runs never approve it): once every VM of the
# inventory it names is drained, it no longer holds the clock, even when the jump takes the clock past its NotBefore.
FOREIGN_SOON = event(status='Scheduled', resources=('web_1', 'partner_0'), not_before=10.0)


@pytest.mark.parametrize('events, drained, expected', [
    ([event(), FOREIGN_SOON], {'web_1'}, 30.0),
    ([event(), FOREIGN_SOON], {'web_1', 'spot_0'}, 30.0),
    # Its inventory VM is still in service: the run has drained it to do.
    ([event(), FOREIGN_SOON], set(), None),
    ([event(), FOREIGN_SOON], {'spot_0'}, None),
    # Only some of its inventory VMs drained.
    ([event(), event(status='Scheduled', resources=('web_1', 'spot_0', 'partner_0'), not_before=10.0)], {'web_1'},
     None),
    # An event of inventory VMs only is the run's to approve, drained or not.
    ([event(), event(status='Scheduled', resources=('web_1',), not_before=10.0)], {'web_1'}, None),
    # An event of foreign VMs only is not the run's to read: it holds the clock as before.
    ([event(), event(status='Scheduled', resources=('partner_0',), not_before=10.0)], {'web_1'}, None),
    # Drained hosts change nothing else: a scenario step due, or a Started event no round has read.
    ([event(), event(kind='Reboot', resources=('spot_0',)), FOREIGN_SOON], {'web_1'}, None),
])
def test_linger_to_skip_once_read_past_a_foreign_event_whose_hosts_are_drained(events, drained, expected):
    read_started = {'E-Freeze-web_0'}
    seconds = linger_to_skip_once_read(events, NOW, ENDED, read_started, set(MANAGED), clearance=CLEARANCE,
                                       drained=drained)
    assert seconds == (None if expected is None else expected + LINGER_SKIP_MARGIN)


def test_a_foreign_event_whose_hosts_are_drained_does_not_lift_a_scenario_step_due():
    seconds = linger_to_skip_once_read([event(), FOREIGN_SOON], NOW, ENDED, READ, set(MANAGED), clearance=CLEARANCE,
                                       due=(NOW + 100.0,), drained={'web_1'})
    assert seconds is None
