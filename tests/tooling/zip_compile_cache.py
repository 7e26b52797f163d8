# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Keeps what Python compiles from zip archives, for the test venvs' module runs.

Every module ansible runs is an AnsiballZ payload: a zip of the module and
the ``module_utils`` it imports, put on ``sys.path``. Python imports from a
zip with ``zipimport``, which keeps no ``.pyc``: every module run compiles
``ansible.module_utils.basic`` and the rest from source again, about half of
the run's CPU, and the test suite runs well over a thousand modules. This
keeps each compiled module (``marshal``, as a ``.pyc`` holds it) under the
SHA-256 of its source, so a run whose sources were compiled before loads
them instead, as a normal import loads a ``.pyc``. What runs is the same:
the code object is what ``compile`` gives for those exact bytes, with the
file name of this run's archive (tracebacks name the right file).

Installed into the project's test venvs only (``install_zip_compile_cache``
in tests/tooling/common.sh: this file and a ``.pth`` line that imports it and
calls ``install``); never part of the collection. The cache is ``zip-compile-cache`` in the venv
(``AZURE_MAINTENANCE_ZIP_COMPILE_CACHE`` names another folder; empty turns it
off). Anything unusable in it (a half-written or foreign file) is compiled
again and replaced; a folder that cannot be written only means no caching.
"""

import os
import sys
import types
import zipimport

_ENVIRONMENT_VARIABLE = 'AZURE_MAINTENANCE_ZIP_COMPILE_CACHE'
# A folder with more entries than this is halved (the least recently written
# go) before the next entry is written: each version of a source is an entry.
MAX_ENTRIES = 4000


def cache_folder():
    """The folder of the cache, or None when it is turned off."""
    folder = os.environ.get(_ENVIRONMENT_VARIABLE)
    if folder is None:
        return os.path.join(sys.prefix, 'zip-compile-cache')
    return folder or None


def entry_path(folder, source):
    """Where the code compiled from ``source`` (bytes) is kept."""
    import hashlib  # here, not at start-up: every interpreter of the venv imports this module
    digest = hashlib.sha256(source).hexdigest()
    # The marshal format and the bytecode are the interpreter's; -O changes the code.
    return os.path.join(folder, '%s-O%d-%s' % (sys.implementation.cache_tag, sys.flags.optimize, digest))


def _fix_file_name(code, pathname):
    """``code`` (and the code nested in it) as compiled from ``pathname``."""
    fix = getattr(sys.modules.get('_imp'), '_fix_co_filename', None)
    if fix is not None:
        fix(code, pathname)  # what importlib does with a .pyc of a moved source
        return code
    consts = tuple(_fix_file_name(const, pathname) if isinstance(const, types.CodeType) else const
                   for const in code.co_consts)
    return code.replace(co_filename=pathname, co_consts=consts)


def make_room(folder):
    """Halve ``folder`` (the least recently written entries go) once it holds MAX_ENTRIES."""
    # Counted first: each entry's time is read only when some must go.
    if len(os.listdir(folder)) < MAX_ENTRIES:
        return
    entries = []
    for entry in os.scandir(folder):
        try:
            entries.append((entry.stat().st_mtime, entry.path))
        except OSError:
            continue
    for dummy, path in sorted(entries)[:len(entries) // 2]:
        try:
            os.unlink(path)
        except OSError:
            pass


def _load(path):
    import marshal
    try:
        with open(path, 'rb') as handle:
            code = marshal.loads(handle.read())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    return code if isinstance(code, types.CodeType) else None


def _store(folder, path, code):
    import marshal
    partial = '%s.%d.partial' % (path, os.getpid())
    try:
        os.makedirs(folder, exist_ok=True)
        make_room(folder)
        with open(partial, 'wb') as handle:
            handle.write(marshal.dumps(code))
        os.replace(partial, path)  # whole or not at all, also for a run reading it now
    except OSError:
        try:
            os.unlink(partial)
        except OSError:
            pass


def caching(compile_source):
    """``compile_source`` (zipimport's ``_compile_source(pathname, source)``), looking in the cache first."""
    def compile_source_cached(pathname, source):
        folder = cache_folder()
        if folder is None:
            return compile_source(pathname, source)
        path = entry_path(folder, source)
        code = _load(path)
        if code is not None:
            return _fix_file_name(code, pathname)
        code = compile_source(pathname, source)
        _store(folder, path, code)
        return code
    compile_source_cached.uncached = compile_source
    return compile_source_cached


def install():
    """Make zipimport look in the cache (once; Pythons without the hook are left alone)."""
    original = getattr(zipimport, '_compile_source', None)
    if original is None or hasattr(original, 'uncached'):
        return
    zipimport._compile_source = caching(original)
