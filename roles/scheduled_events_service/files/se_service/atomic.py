# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Replacing a file atomically, for the state and the metrics textfile.

The new content goes to a temporary file in the same directory, which is
then renamed over the old file: a reader (node_exporter, the daemon after a
crash) sees the old content or the new one, never half of one. Temporary
files carry a prefix of their own, so those a killed process left behind can
be found and removed.
"""

import os
import tempfile

TEMPORARY_SUFFIX = '.tmp'


def temporary_prefix(path):
    """The prefix of the temporary files made while replacing ``path``: ``.state.`` for ``state.json``."""
    return '.%s.' % os.path.splitext(os.path.basename(path))[0]


def write_atomically(path, data, mode=0o600, durable=False):
    """Replace ``path`` with ``data`` (bytes), created with ``mode``.

    ``durable`` also syncs the file and the directory, so the new content
    survives a power cut once this returns. Raises OSError.
    """
    directory = os.path.dirname(path) or '.'
    handle, temporary = tempfile.mkstemp(prefix=temporary_prefix(path), suffix=TEMPORARY_SUFFIX, dir=directory)
    try:
        with os.fdopen(handle, 'wb') as stream:
            stream.write(data)
            stream.flush()
            if durable:
                os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.rename(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    if durable:
        # The rename itself lives in the directory; sync it too.
        directory_handle = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(directory_handle)
        finally:
            os.close(directory_handle)


def remove_stale_temporaries(path):
    """Remove the temporary files an interrupted ``write_atomically(path, ...)`` left; return their names.

    Only call this when no other writer of ``path`` runs (at start).
    """
    directory = os.path.dirname(path) or '.'
    prefix = temporary_prefix(path)
    removed = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in sorted(names):
        # Any suffix: versions before this one made them without ".tmp".
        if name.startswith(prefix):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                continue
            removed.append(name)
    return removed
