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
import tempfile
import time

STATE_VERSION = 1
# Finished events kept for ``--once`` and people reading the file.
HISTORY_LIMIT = 50


class StateError(Exception):
    """The state file cannot be read or written; the message says what to do."""


def empty_state():
    return {'version': STATE_VERSION, 'resource_name': None, 'document_incarnation': None, 'events': {},
            'event_order': [], 'history': []}


def load_state(path, set_aside_corrupt=True):
    """The saved state, or an empty one when there is none yet.

    A state file that cannot be parsed is renamed aside (``.corrupt``) so the
    daemon starts afresh instead of refusing to run during maintenance
    (unless ``set_aside_corrupt`` is false, for a dry run).
    Returns ``(state, warning_or_None)``.
    """
    try:
        with open(path) as handle:
            state = json.load(handle)
    except FileNotFoundError:
        return empty_state(), None
    except (ValueError, OSError) as exc:
        aside = '%s.corrupt.%d' % (path, int(time.time())) if set_aside_corrupt else None
        if aside:
            try:
                os.rename(path, aside)
            except OSError:
                aside = None
        return empty_state(), ('state file %s could not be read (%s); starting with an empty state%s'
                               % (path, exc, ' (old file kept as %s)' % aside if aside else ''))
    if not isinstance(state, dict) or state.get('version') != STATE_VERSION:
        return empty_state(), 'state file %s has an unknown format; starting with an empty state' % path
    for key, value in empty_state().items():
        state.setdefault(key, value)
    return state, None


def save_state(path, state):
    """Write ``state`` to ``path`` atomically and durably."""
    directory = os.path.dirname(path) or '.'
    try:
        if not os.path.isdir(directory):
            os.makedirs(directory, mode=0o700)
        handle, temporary = tempfile.mkstemp(prefix='.state.', dir=directory)
        try:
            with os.fdopen(handle, 'w') as stream:
                json.dump(state, stream, sort_keys=True, separators=(',', ':'))
                stream.flush()
                os.fsync(stream.fileno())
            os.rename(temporary, path)
        except BaseException:
            try:
                os.unlink(temporary)
            except OSError:
                pass
            raise
        # The rename itself lives in the directory; sync it too so it survives a power cut.
        directory_handle = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(directory_handle)
        finally:
            os.close(directory_handle)
    except OSError as exc:
        raise StateError('cannot write the state file %s (%s); check the directory exists and is writable by the '
                         'service' % (path, exc.strerror or exc))
