# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The daemon's memory across restarts, written atomically.

The state holds the last document and, per event, which phases are due and
what each hook did. It is saved before a hook starts and after it ends, by
writing a temporary file, syncing it and renaming it over the old one, so a
crash at any moment leaves either the old or the new state, never half of
one.
"""

import json
import os
import time

from .atomic import remove_stale_temporaries, write_atomically

STATE_VERSION = 1
# Finished events kept for ``--once`` and people reading the file.
HISTORY_LIMIT = 50


class StateError(Exception):
    """The state file cannot be read or written; the message says what to do."""


def empty_state():
    return {'version': STATE_VERSION, 'resource_name': None, 'document_incarnation': None, 'events': {},
            'event_order': [], 'history': []}


def _is_text_or_none(value):
    return value is None or isinstance(value, str)


def _phase_problem(name, phase):
    if not isinstance(phase, dict):
        return 'phase %s is not an object' % name
    if not isinstance(phase.get('hooks'), list) or not all(isinstance(hook, str) for hook in phase['hooks']):
        return 'phase %s has no list of hooks' % name
    results = phase.get('results')
    if not isinstance(results, dict) or not all(isinstance(result, dict) and isinstance(result.get('outcome'), str)
                                                for result in results.values()):
        return 'phase %s has results without an outcome' % name
    if not isinstance(phase.get('finished'), bool):
        return 'phase %s does not say whether it finished' % name
    return None


def _record_problem(key, record):
    if not isinstance(record, dict):
        return 'event %s is not an object' % key
    if not isinstance(record.get('event'), dict) or not isinstance(record['event'].get('event_id'), str):
        return 'event %s has no event with an event_id' % key
    for field in ('present', 'hooks_enabled'):
        if not isinstance(record.get(field), bool):
            return 'event %s: %s is not true or false' % (key, field)
    if not isinstance(record.get('due'), list) or not all(isinstance(phase, str) for phase in record['due']):
        return 'event %s: due is not a list of phases' % key
    if not isinstance(record.get('phases'), dict):
        return 'event %s: phases is not an object' % key
    for name, phase in record['phases'].items():
        problem = _phase_problem(name, phase)
        if problem:
            return 'event %s: %s' % (key, problem)
    if not _is_text_or_none(record.get('approved_at')):
        return 'event %s: approved_at is not a time' % key
    if record.get('approval') is not None and not isinstance(record['approval'], list):
        return 'event %s: approval is not a list' % key
    return None


def state_problem(state):
    """What makes ``state`` (parsed JSON) unusable as the daemon's state, or None when it is sound.

    Every field the daemon reads is checked here, once, so that a file of the
    wrong shape is set aside at start instead of crashing a poll later.
    """
    if not isinstance(state, dict):
        return 'it is not a JSON object'
    if state.get('version') != STATE_VERSION:
        return 'its version is %r, not %d' % (state.get('version'), STATE_VERSION)
    incarnation = state.get('document_incarnation')
    if incarnation is not None and (isinstance(incarnation, bool) or not isinstance(incarnation, int)):
        return 'document_incarnation is not a whole number'
    if not _is_text_or_none(state.get('resource_name')):
        return 'resource_name is not text'
    events, order = state.get('events', {}), state.get('event_order', [])
    if not isinstance(events, dict) or not isinstance(order, list) or not isinstance(state.get('history', []), list):
        return 'events, event_order or history has the wrong type'
    if sorted(order, key=str) != sorted(events, key=str) or len(set(order)) != len(order):
        return 'event_order does not list each event once'
    for key in order:
        problem = _record_problem(key, events[key])
        if problem:
            return problem
    return None


def _set_aside(path, reason, set_aside_corrupt):
    aside = '%s.corrupt.%d' % (path, int(time.time())) if set_aside_corrupt else None
    if aside:
        try:
            os.rename(path, aside)
        except OSError:
            aside = None
    return empty_state(), ('state file %s %s; starting with an empty state%s'
                           % (path, reason, ' (old file kept as %s)' % aside if aside else ''))


def load_state(path, set_aside_corrupt=True):
    """The saved state, or an empty one when there is none yet.

    A state file that cannot be parsed, or whose content has the wrong shape,
    is renamed aside (``.corrupt.<time>``) so the daemon starts afresh instead
    of refusing to run during maintenance. Unless ``set_aside_corrupt`` is
    false (a dry run), temporary files a killed save left are removed too.
    Returns ``(state, warning_or_None)``.
    """
    notes = []
    if set_aside_corrupt:
        removed = remove_stale_temporaries(path)
        if removed:
            notes.append('removed %d temporary file(s) an interrupted save left: %s' % (len(removed), ', '.join(removed)))
    try:
        with open(path) as handle:
            state = json.load(handle)
    except FileNotFoundError:
        state = None
    except (ValueError, OSError) as exc:
        state, warning = _set_aside(path, 'could not be read (%s)' % exc, set_aside_corrupt)
        notes.append(warning)
    else:
        if isinstance(state, dict):
            for key, value in empty_state().items():
                state.setdefault(key, value)
        problem = state_problem(state)
        if problem:
            state, warning = _set_aside(path, 'has the wrong shape (%s)' % problem, set_aside_corrupt)
            notes.append(warning)
    return state if state is not None else empty_state(), '; '.join(notes) or None


def save_state(path, state):
    """Write ``state`` to ``path`` atomically and durably."""
    directory = os.path.dirname(path) or '.'
    try:
        if not os.path.isdir(directory):
            os.makedirs(directory, mode=0o700)
        write_atomically(path, json.dumps(state, sort_keys=True, separators=(',', ':')).encode('utf-8'), mode=0o600,
                         durable=True)
    except (OSError, ValueError) as exc:
        raise StateError('cannot write the state file %s (%s); check the directory exists and is writable by the '
                         'service' % (path, getattr(exc, 'strerror', None) or exc))
