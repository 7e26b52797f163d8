# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rolling playbook's plays of rounds share out every round exactly once.

The playbook's own expressions are rendered here with Jinja2, for many
values of rolling_max_rounds; tests/rolling runs them in a real playbook.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import jinja2
import pytest
import yaml

PLAYBOOK = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'playbooks', 'rolling_maintenance.yml')
ROUNDS_PLAY = 'Maintain, round after round'


@pytest.fixture(scope='module')
def plays():
    with open(PLAYBOOK, encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def rounds_plays(plays):
    return [play for play in plays if play.get('name') == ROUNDS_PLAY]


def test_there_are_as_many_plays_of_rounds_as_the_playbook_says(plays):
    found = rounds_plays(plays)
    assert len(found) == found[0]['vars']['_rolling_round_plays']
    # One play, repeated: a change to it is a change to all of them.
    assert all(play is found[0] for play in found)
    # They come one after another, between the setup and the report.
    names = [play['name'] for play in plays]
    first = names.index(ROUNDS_PLAY)
    assert names[first:first + len(found)] == [ROUNDS_PLAY] * len(found)
    assert names[first - 1] == 'Rolling Azure maintenance'
    assert names[first + len(found)] == 'Report on the rolling Azure maintenance'


def render(text, variables):
    return jinja2.Environment().from_string(text).render(variables)


def batches_of_each_play(play, max_rounds, batch, play_count):
    """The batch indexes each play of rounds includes, from the playbook's own expressions."""
    include = [task for task in play['tasks'] if task.get('ansible.builtin.include_tasks') == 'tasks/rolling_batch.yml']
    assert len(include) == 1
    task = include[0]
    variables = {'_rolling_cfg': {'max_rounds': str(max_rounds)}, '_rolling_batch': batch,
                 '_rolling_round_plays': play_count}
    variables['_rolling_batches'] = render(task['vars']['_rolling_batches'], variables)
    variables['_rolling_play_batches'] = render(task['vars']['_rolling_play_batches'], variables)
    shares = []
    for index in range(play_count):
        variables['_rolling_rounds_play'] = str(index)
        shares.append(jinja2.Environment().compile_expression(task['loop'].strip()[2:-2])(**variables))
    return shares


@pytest.mark.parametrize('max_rounds', [1, 2, 24, 25, 26, 45, 300, 499, 500, 501, 999, 1000, 1001, 5000, 100000])
@pytest.mark.parametrize('batch', [25, 2])
def test_every_round_is_in_exactly_one_play(plays, max_rounds, batch):
    play_count = rounds_plays(plays)[0]['vars']['_rolling_round_plays']
    shares = batches_of_each_play(rounds_plays(plays)[0], max_rounds, batch, play_count)
    every_batch = [index for share in shares for index in share]
    total = (max_rounds + batch - 1) // batch
    # In order, each once, and no batch beyond the last round.
    assert every_batch == list(range(total))
    # No play holds more than its share, so none keeps more rounds' tasks than that.
    assert max(len(share) for share in shares) == (total + play_count - 1) // play_count
