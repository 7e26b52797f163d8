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


def batches_of_each_play(play, max_rounds, batch, play_count, source='imds'):
    """The batch indexes each play of rounds includes, from the playbook's own expressions."""
    include = [task for task in play['tasks'] if task.get('ansible.builtin.include_tasks') == 'tasks/rolling_batch.yml']
    assert len(include) == 1
    task = include[0]
    variables = {'_rolling_cfg': {'max_rounds': str(max_rounds), 'source': source}, '_rolling_batch': batch,
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


@pytest.mark.parametrize('max_rounds', [1, 26, 1000, 5000])
def test_over_the_fleet_plane_the_play_that_reaches_the_batches_takes_them_all(plays, max_rounds):
    """Over the fleet plane only the last play of rounds runs the batches (the others act on one round each and
    end): it must not stop at its share."""
    play_count = rounds_plays(plays)[0]['vars']['_rolling_round_plays']
    shares = batches_of_each_play(rounds_plays(plays)[0], max_rounds, 25, play_count, source='resource_graph')
    assert shares[-1] == list(range((max_rounds + 24) // 25))


FLEET_ROUND = os.path.join(os.path.dirname(PLAYBOOK), 'tasks', 'rolling_fleet_round.yml')


@pytest.fixture(scope='module')
def hand_over():
    """The task block of a fleet-plane round that hands the rounds to the next play."""
    with open(FLEET_ROUND, encoding='utf-8') as handle:
        tasks = yaml.safe_load(handle)
    found = [task for task in tasks if task.get('name') == 'Hand the rounds to the next play']
    assert len(found) == 1
    return found[0]


def fleet_variables(play_index, participants, play_hosts=('keeper',), fleet_round=0):
    return {'_rolling_all_hosts': ['keeper', 'h1', 'h2', 'h3', 'h4'], '_rolling_keeper': 'keeper',
            '_rolling_plan': {'participants': participants}, '_rolling_rounds_play': str(play_index),
            '_rolling_round_plays': 20, '_rolling_groups': ['web', 'db'], '_rolling_batch': 25,
            'ansible_play_hosts_all': list(play_hosts), '_rolling_fleet_round': fleet_round}


def evaluate(expression, variables):
    environment = jinja2.Environment()
    # Ansible's difference filter, as used by the playbook.
    environment.filters['difference'] = lambda left, right: [item for item in left if item not in right]
    return environment.compile_expression(expression.strip())(**variables)


@pytest.mark.parametrize('play_index, participants, expected', [
    # The keeper first, then the participants, in inventory order whatever the plan's order.
    (0, ['h3', 'h1'], ['keeper', 'h1', 'h3']),
    (0, [], ['keeper']),
    (5, ['keeper', 'h4'], ['keeper', 'h4']),
    (17, ['h2'], ['keeper', 'h2']),
    # The play before the last hands over to every host of the run.
    (18, ['h2'], 'web:db'),
])
def test_over_the_fleet_plane_a_play_of_rounds_names_the_hosts_of_the_next(
        hand_over, play_index, participants, expected):
    choose = [task for task in hand_over['block'] if task.get('name') == 'Choose the hosts of the next play of rounds']
    assert len(choose) == 1 and choose[0]['delegate_to'] == 'localhost' and choose[0]['delegate_facts']
    expression = choose[0]['ansible.builtin.set_fact']['_rolling_next_hosts'].strip()[2:-2]
    assert evaluate(expression, fleet_variables(play_index, participants)) == expected


@pytest.mark.parametrize('play_hosts, participants, fleet_round, hands_over', [
    # Nothing for the hosts, or only for hosts this play runs on: the play goes on.
    (['keeper'], [], 0, False),
    (['keeper', 'h1', 'h2'], ['h2'], 3, False),
    (['keeper', 'h1', 'h2'], ['keeper', 'h1', 'h2'], 23, False),
    # A host the play does not run on: the next play must.
    (['keeper'], ['h1'], 0, True),
    (['keeper', 'h1'], ['h1', 'h3'], 7, True),
    # The play's last round hands over whatever it needs.
    (['keeper'], [], 24, True),
])
def test_a_play_of_rounds_over_the_fleet_plane_hands_over_only_when_it_must(
        hand_over, play_hosts, participants, fleet_round, hands_over):
    variables = fleet_variables(0, participants, play_hosts, fleet_round)
    assert evaluate(hand_over['when'], variables) is hands_over
