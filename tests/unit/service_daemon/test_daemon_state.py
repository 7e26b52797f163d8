# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The state file: any unusable content is set aside at start, saves are atomic, leftovers are cleaned."""

import copy
import json
import os
import stat

import pytest

from se_service.atomic import remove_stale_temporaries, temporary_prefix, write_atomically
from se_service.state import StateError, empty_state, load_state, save_state, state_problem

SOUND_RECORD = {
    'event': {'event_id': 'A1', 'event_type': 'Freeze', 'event_status': 'Scheduled'},
    'present': True, 'first_seen': '2026-11-23T08:00:00Z', 'hooks_enabled': True, 'due': ['prepare'],
    'phases': {'prepare': {'hooks': ['10-drain'], 'results': {'10-drain': {'outcome': 'running'}},
                           'started_at': '2026-11-23T08:00:01Z', 'finished': False}},
    'approved_at': None, 'approval': ['wait', '#1', 'prepare hooks have not finished'],
}


def sound_state():
    state = empty_state()
    state.update({'resource_name': 'vm0', 'document_incarnation': 3, 'events': {'a1': copy.deepcopy(SOUND_RECORD)},
                  'event_order': ['a1']})
    return state


def _with(change):
    state = sound_state()
    change(state)
    return state


WRONG_SHAPES = [
    ([], 'not a JSON object'),
    ({'version': 2}, 'version is 2'),
    (_with(lambda s: s.update(document_incarnation='9' * 5000)), 'document_incarnation is not a whole number'),
    (_with(lambda s: s.update(document_incarnation=True)), 'document_incarnation is not a whole number'),
    (_with(lambda s: s.update(events=[])), 'wrong type'),
    (_with(lambda s: s.update(event_order=['a1', 'b2'])), 'event_order does not list each event once'),
    (_with(lambda s: s.update(event_order=['a1', 'a1'])), 'event_order does not list each event once'),
    (_with(lambda s: s['events']['a1'].pop('present')), 'present is not true or false'),
    (_with(lambda s: s['events']['a1'].update(event='x')), 'has no event with an event_id'),
    (_with(lambda s: s['events']['a1'].update(due='prepare')), 'due is not a list'),
    (_with(lambda s: s['events']['a1']['phases']['prepare'].pop('hooks')), 'has no list of hooks'),
    (_with(lambda s: s['events']['a1']['phases']['prepare']['results'].update(x=1)), 'results without an outcome'),
    (_with(lambda s: s['events']['a1']['phases']['prepare'].update(finished=None)), 'whether it finished'),
    (_with(lambda s: s['events']['a1'].update(approved_at=5)), 'approved_at is not a time'),
]


@pytest.mark.parametrize('state, problem', WRONG_SHAPES)
def test_each_wrong_shape_is_named(state, problem):
    assert problem in state_problem(state)


def test_a_sound_state_has_no_problem():
    assert state_problem(sound_state()) is None
    assert state_problem(empty_state()) is None


@pytest.mark.parametrize('content', [json.dumps({'version': 1, 'events': {'a1': {}}, 'event_order': ['a1']}),
                                     json.dumps({'version': 1, 'document_incarnation': '9' * 5000}),
                                     '{"version": 1, "document_incarnation": %s}' % ('9' * 5000),
                                     '{"version": 1, "events": '])
def test_an_unusable_state_file_is_set_aside_and_an_empty_state_used(tmp_path, content):
    path = str(tmp_path / 'state.json')
    with open(path, 'w') as handle:
        handle.write(content)
    state, warning = load_state(path)
    assert state == empty_state()
    assert 'starting with an empty state' in warning and 'old file kept as' in warning
    aside = [name for name in os.listdir(str(tmp_path)) if name.startswith('state.json.corrupt.')]
    assert len(aside) == 1 and not os.path.exists(path)
    with open(str(tmp_path / aside[0])) as handle:
        assert handle.read() == content


def test_a_dry_run_leaves_an_unusable_file_in_place(tmp_path):
    path = str(tmp_path / 'state.json')
    with open(path, 'w') as handle:
        handle.write('[]')
    state, warning = load_state(path, set_aside_corrupt=False)
    assert state == empty_state() and 'not a JSON object' in warning
    assert os.listdir(str(tmp_path)) == ['state.json']


def test_a_saved_state_loads_back_private(tmp_path):
    path = str(tmp_path / 'state.json')
    save_state(path, sound_state())
    assert load_state(path) == (sound_state(), None)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_temporaries_a_killed_save_left_are_removed_at_start(tmp_path):
    path = str(tmp_path / 'state.json')
    save_state(path, sound_state())
    leftovers = ['.state.abc123', '.state.json.x.tmp', '.state.q1w2e3.tmp']
    for name in leftovers:
        (tmp_path / name).write_text('{"half": ')
    (tmp_path / '.other.tmp').write_text('not ours')
    state, warning = load_state(path)
    assert state == sound_state()
    assert 'removed 3 temporary file(s)' in warning
    assert sorted(os.listdir(str(tmp_path))) == ['.other.tmp', 'state.json']


def test_saving_into_an_unusable_directory_raises_a_state_error(tmp_path):
    (tmp_path / 'not-a-directory').write_text('')
    with pytest.raises(StateError, match='cannot write the state file .* writable by the service'):
        save_state(str(tmp_path / 'not-a-directory' / 'state.json'), empty_state())


def test_write_atomically_leaves_no_temporary_behind_when_it_fails(tmp_path):
    path = str(tmp_path / 'metrics.prom')
    write_atomically(path, b'one\n', mode=0o644)
    os.mkdir(path + '.d')
    with pytest.raises(OSError):
        write_atomically(path + '.d', b'two\n')  # cannot rename a file over a directory
    assert sorted(os.listdir(str(tmp_path))) == ['metrics.prom', 'metrics.prom.d']
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert temporary_prefix(path) == '.metrics.'
    assert remove_stale_temporaries(str(tmp_path / 'absent' / 'x.json')) == []
