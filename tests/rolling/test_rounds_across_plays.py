# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""System test: the rounds of a run go on from one play of rounds to the next.

The playbook shares its rounds out among several plays (a play keeps every
task it includes until it ends, so one play of 1,000 rounds would keep
growing). Here the batches are two rounds long and the rounds are shared out
as among six plays (test-only overrides of the playbook's private variables),
so a run of 24 rounds spans six plays of two batches, and an event is handled
across play boundaries: the state, the count of rounds and the stop carry
over, every round runs exactly once, and the plays after the stop end at once.

Run: .venv/bin/python -m pytest tests/rolling/test_rounds_across_plays.py -v
"""

import os
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rolling_harness import RollingWorld, inventory_name, seconds_past_first_removal  # noqa: E402 pylint: disable=wrong-import-position

pytestmark = pytest.mark.skipif(sys.platform != 'linux', reason='needs the simulator and ansible-playbook locally')

FREEZE = 'E6000000-0000-4000-8000-000000000001'
ROUNDS = 24
ROUNDS_PLAY_BANNER = 'PLAY [Maintain, round after round]'
# The default output's line for a round's include: the hosts, then the loop's label.
ROUND_INCLUDED = re.compile(r'^included: \S+/rolling_round_imds\.yml for (.+) => \(item=round ([0-9]+)\)$', re.M)


def reads_of(world, vm):
    return sum(1 for entry in world.control.log(vm=vm)
               if entry['method'] == 'GET' and entry['path'].startswith('/metadata/scheduledevents'))


def test_rounds_and_an_event_carry_over_from_play_to_play(tmp_path):
    groups = {'web': {'vms': [('web_0', 0), ('web_1', 1)], 'max_unavailable': 1}}
    with RollingWorld(tmp_path, groups, speed=1) as world:
        # A pause of unknown length (DurationInSeconds -1) keeps its host
        # drained until the event leaves the document, and this one would stay
        # an hour: it leaves when the second play of rounds has begun, however
        # fast or slow the rounds are, as the clock then jumps past its removal.
        # So it is drained in the first play and undrained in a later one.
        world.control.create_event(event_id=FREEZE, event_type='Freeze', resources=['web_0'],
                                   duration_seconds=-1, impact_seconds=1, linger_seconds=3600)

        def end_the_freeze_in_the_second_play():
            if world.output_so_far().count(ROUNDS_PLAY_BANNER) < 2:
                return False
            world.control.advance_clock(seconds_past_first_removal(world.control.events(),
                                                                   world.control.clock()['epoch']))
            return True

        # Two rounds a batch: 12 batches shared out as among 6 plays, two batches (four rounds) a play; the
        # other 14 plays of rounds of the playbook end at once. Rounds start at least half a second apart, so
        # the few rounds the event needs once its impact is over come well before the last one.
        run = world.run_playbook_watched(
            end_the_freeze_in_the_second_play, env={'ANSIBLE_DISPLAY_SKIPPED_HOSTS': 'false'},
            rolling_max_rounds=ROUNDS, rolling_settle_seconds=10 ** 6, rolling_poll_interval_seconds=0.5,
            _rolling_batch=2, _rolling_round_plays=6)
        assert run.returncode == 0, run.output[-3000:]
        assert run.report['run']['rounds'] == ROUNDS, run.report['run']
        assert run.report['run']['stop_reason'] == 'stopped after %d rounds (rolling_max_rounds)' % ROUNDS
        # Every round was included once, for both hosts: none lost or run twice at a play boundary.
        included = ROUND_INCLUDED.findall(run.output)
        assert sorted(int(number) for _hosts, number in included) == list(range(1, ROUNDS + 1)), included
        assert all(sorted(hosts.split(', ')) == [inventory_name('web_0'), inventory_name('web_1')]
                   for hosts, _number in included), included
        # And each read both hosts (a throttled read is retried, so a host may be asked more often).
        assert reads_of(world, 'web_1') >= ROUNDS
        # Every play of rounds started; those after the last round ended at once.
        plays = run.output.split(ROUNDS_PLAY_BANNER)[1:]
        assert len(plays) == 20, run.output[-3000:]
        assert [len(ROUND_INCLUDED.findall(play)) for play in plays] == [4] * 6 + [0] * 14, run.output[-3000:]
        # The event's drain and its undrain fell in different plays.
        drained_in = [index for index, play in enumerate(plays) if 'TASK [Record the drain]' in play]
        undrained_in = [index for index, play in enumerate(plays) if 'TASK [Record the undrain]' in play]
        assert len(drained_in) == 1 and len(undrained_in) == 1 and drained_in[0] < undrained_in[0], \
            (drained_in, undrained_in)
        # The event, begun in one play and finished in another, was handled once and safely.
        event = run.event(FREEZE)
        assert event['outcome'] == 'approved', event
        assert [step for _at, step in world.steps()[inventory_name('web_0')]] == ['drain', 'verify', 'undrain']
        assert [event_ids for _at, _vm, event_ids in world.approvals()] == [[FREEZE.lower()]]
        assert world.invariant_problems(run) == []


def test_rounds_start_no_sooner_than_the_poll_interval_apart(tmp_path):
    """The wait between rounds lasts until poll_interval after the last round's plan, fractions included: a
    round that took 0.6 s of a 2 s interval is followed by a wait of 1.4 s, not of 1 s, and one that took
    1.5 s by a wait of 0.5 s, not by none. A slow machine only makes rounds further apart."""
    groups = {'web': {'vms': [('web_0', 0), ('web_1', 1)], 'max_unavailable': 1}}
    poll = 2.0
    with RollingWorld(tmp_path, groups, speed=1) as world:
        run = world.run_playbook(rolling_max_rounds=6, rolling_settle_seconds=10 ** 6,
                                 rolling_poll_interval_seconds=poll)
        assert run.returncode == 0, run.output[-3000:]
        reads = world.scheduled_events_reads('web_0')
        # One read a round (an idle world: no throttling, no error to retry).
        assert len(reads) == 6, reads
        # Both clocks are the controller's; the log keeps milliseconds.
        gaps = [later - earlier for earlier, later in zip(reads, reads[1:])]
        assert min(gaps) >= poll - 0.002, gaps
