# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""When the rolling harness may move the simulated clock past the time handled events stay in the document."""

import os
import sys

import pytest

ROLLING_TESTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                 'rolling')
if ROLLING_TESTS_DIR not in sys.path:
    sys.path.insert(0, ROLLING_TESTS_DIR)

from rolling_harness import LINGER_SKIP_MARGIN, linger_to_skip  # noqa: E402 pylint: disable=wrong-import-position
from imds_simulator.clock import format_iso  # noqa: E402 pylint: disable=wrong-import-position,wrong-import-order

NOW = 1_000_000.0
MANAGED = {'web_0': 'host-web-0', 'web_1': 'host-web-1', 'spot_0': 'host-spot-0'}


def event(status='Started', kind='Freeze', resources=('web_0',), impact_ends=-5.0, removes=30.0):
    return {'id': 'E-%s-%s' % (kind, '-'.join(resources)), 'status': status, 'type': kind,
            'resources': list(resources), 'impact_ends_at': format_iso(NOW + impact_ends), 'removes_at': format_iso(NOW + removes)}


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
