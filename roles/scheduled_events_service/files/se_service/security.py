# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Who may change what the daemon runs as root.

Hooks and the configuration decide which programs run as root, so anyone who
can write them owns the machine. They must be owned by root (or by the
account the daemon runs as, which could change them anyway) and writable by
nobody else; the same holds for the directories holding them, or a file
could be swapped.
"""

import os
import stat


class InsecureFileError(Exception):
    """A file or directory others could change; the message says how to fix it."""


def trusted_owners():
    """uids allowed to own configuration and hooks."""
    return {0, os.geteuid()}


def check_trusted(path, expect_directory=False, require_executable=False, allow_sticky=False):
    """Raise InsecureFileError unless ``path`` is safe to trust; return its stat result.

    ``allow_sticky`` accepts a directory writable by others when its sticky
    bit is set (like /tmp): others may add entries there but cannot rename or
    remove what a trusted owner put in it.
    """
    try:
        info = os.stat(path)
    except OSError as exc:
        raise InsecureFileError('%s cannot be read (%s)' % (path, exc.strerror or exc))
    kind = 'directory' if expect_directory else 'file'
    if expect_directory and not stat.S_ISDIR(info.st_mode):
        raise InsecureFileError('%s is not a directory' % path)
    if not expect_directory and not stat.S_ISREG(info.st_mode):
        raise InsecureFileError('%s is not a regular file; remove it or replace it with one' % path)
    if info.st_uid not in trusted_owners():
        raise InsecureFileError('%s %s is owned by uid %d, not by root; run: chown root:root %s'
                                % (kind, path, info.st_uid, path))
    sticky_directory = stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not (allow_sticky and sticky_directory):
        raise InsecureFileError('%s %s is writable by %s (mode %04o); run: chmod go-w %s'
                                % (kind, path, 'group and others' if info.st_mode & stat.S_IWGRP and info.st_mode & stat.S_IWOTH
                                   else 'group' if info.st_mode & stat.S_IWGRP else 'others',
                                   stat.S_IMODE(info.st_mode), path))
    if require_executable and not info.st_mode & stat.S_IXUSR:
        raise InsecureFileError('hook %s is not executable (mode %04o); run: chmod 0755 %s, or rename it to end in '
                                '.disabled' % (path, stat.S_IMODE(info.st_mode), path))
    return info


def _parents(path):
    parents = []
    directory = os.path.dirname(path)
    while True:
        parents.append(directory)
        parent = os.path.dirname(directory)
        if parent == directory:
            return parents
        directory = parent


def check_trusted_chain(path, require_executable=False):
    """Check ``path``, the file it resolves to and every directory above either; return the resolved path.

    Whoever can write any of these directories could swap the file between
    two checks, so each must be trusted like the file itself. The folder
    holding the file must be writable by root only; folders further up may
    be sticky (like /tmp), since others cannot rename what root owns there.
    """
    path = os.path.abspath(path)
    resolved = os.path.realpath(path)
    check_trusted(path, require_executable=require_executable)
    if resolved != path:
        check_trusted(resolved, require_executable=require_executable)
    immediate = {os.path.dirname(path), os.path.dirname(resolved)}
    checked = set()
    for directory in _parents(path) + _parents(resolved):
        if directory not in checked:
            checked.add(directory)
            check_trusted(directory, expect_directory=True, allow_sticky=directory not in immediate)
    return resolved
