# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Finding and importing the shared Scheduled Events core as ``se_core``.

The core files use relative imports between themselves, so they are loaded
as one package whatever directory they sit in: next to the daemon once the
role installed it (``se_core/``), or ``plugins/module_utils/`` when the daemon
runs from a checkout of the collection.
"""

import importlib
import importlib.machinery
import importlib.util
import os
import sys

PACKAGE = 'se_core'
# A file every core version has; its presence tells a core directory apart.
_MARKER = '_se_client.py'


class CoreNotFoundError(Exception):
    """No usable core directory; the message lists where it was looked for."""


def candidate_directories(program_dir):
    """Where the core is looked for, in order, when ``--core-path`` is not given."""
    candidates = []
    if os.environ.get('SCHEDULED_EVENTS_SERVICE_CORE_PATH'):
        candidates.append(os.environ['SCHEDULED_EVENTS_SERVICE_CORE_PATH'])
    candidates.append(os.path.join(program_dir, PACKAGE))
    # roles/scheduled_events_service/files -> the collection root.
    candidates.append(os.path.join(program_dir, '..', '..', '..', 'plugins', 'module_utils'))
    return [os.path.normpath(path) for path in candidates]


def find_core(program_dir, core_path=None):
    """The directory holding the core, or raise CoreNotFoundError."""
    candidates = [os.path.normpath(core_path)] if core_path else candidate_directories(program_dir)
    for directory in candidates:
        if os.path.isfile(os.path.join(directory, _MARKER)):
            return directory
    raise CoreNotFoundError('the Scheduled Events core (%s and its siblings) was not found in %s; reinstall the role '
                            'or pass --core-path DIR' % (_MARKER, ', '.join(candidates)))


def load_core(program_dir, core_path=None):
    """Import the core as the package ``se_core`` and return its directory."""
    directory = find_core(program_dir, core_path)
    existing = sys.modules.get(PACKAGE)
    if existing is not None:
        if list(getattr(existing, '__path__', [])) == [directory]:
            return directory
        raise CoreNotFoundError('a different %s is already imported from %s' % (PACKAGE, list(existing.__path__)))
    # A package spec without loader: submodules are then found through
    # __path__, which works whether or not the directory has an __init__.py.
    spec = importlib.machinery.ModuleSpec(PACKAGE, None, is_package=True)
    spec.submodule_search_locations = [directory]
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = module
    try:
        importlib.import_module(PACKAGE + '._se_client')
    except ImportError as exc:
        del sys.modules[PACKAGE]
        raise CoreNotFoundError('the core in %s cannot be imported (%s); reinstall the role' % (directory, exc))
    return directory
