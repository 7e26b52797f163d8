# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Finding and running hooks.

Hooks are executables in ``<hooks_dir>/<phase>/``, run one after another in
lexical order of their names. They are started without a shell from an
argument list holding only their own path: event fields reach them as JSON
on stdin and as environment variables, never through a command line.
"""

import json
import os
import signal
import subprocess
import threading
import time

from .security import InsecureFileError, check_trusted

# Names run-parts and package managers leave behind; they are never run.
_IGNORED_SUFFIXES = ('~', '.disabled', '.dpkg-old', '.dpkg-dist', '.dpkg-new', '.dpkg-tmp', '.rpmnew', '.rpmsave',
                     '.rpmorig', '.swp', '.bak', '.orig')
# Enough output to debug a hook; a runaway one cannot fill memory or the log.
OUTPUT_LIMIT_BYTES = 64 * 1024
# Time a hook gets between SIGTERM and SIGKILL once its time is up.
KILL_GRACE_SECONDS = 5.0

OUTCOME_OK = 'ok'
OUTCOME_FAILED = 'failed'
OUTCOME_TIMEOUT = 'timeout'
OUTCOME_REFUSED = 'refused'
OUTCOME_INTERRUPTED = 'interrupted'


class HookResult(object):
    """What became of one hook run."""

    def __init__(self, outcome, exit_code=None, output='', duration=0.0, message=''):
        self.outcome = outcome
        self.exit_code = exit_code
        self.output = output
        self.duration = duration
        self.message = message

    @property
    def succeeded(self):
        return self.outcome == OUTCOME_OK


def is_ignored_name(name):
    """True for names that are never hooks: hidden files, backups, disabled ones."""
    return name.startswith('.') or name.endswith(_IGNORED_SUFFIXES)


def phase_directory(hooks_dir, phase):
    return os.path.join(hooks_dir, phase)


def list_hooks(hooks_dir, phase):
    """Names of the hooks of ``phase`` in the order they run (no checks, see check_hooks)."""
    directory = phase_directory(hooks_dir, phase)
    if not os.path.isdir(directory):
        return []
    return sorted(name for name in os.listdir(directory) if not is_ignored_name(name))


def check_hooks(hooks_dir, phases):
    """Raise InsecureFileError for the first untrustworthy directory or hook; return ``{phase: [names]}``."""
    check_trusted(hooks_dir, expect_directory=True)
    found = {}
    for phase in phases:
        directory = phase_directory(hooks_dir, phase)
        if not os.path.exists(directory):
            found[phase] = []
            continue
        check_trusted(directory, expect_directory=True)
        names = list_hooks(hooks_dir, phase)
        for name in names:
            check_trusted(os.path.join(directory, name), require_executable=True)
        found[phase] = names
    return found


def _text(value):
    # The environment cannot carry NUL bytes; IMDS text could.
    return ('' if value is None else str(value)).replace('\0', '')


def hook_environment(base_environment, phase, event, resource_name, document_incarnation):
    """The environment of a hook: the daemon's own plus the ``SE_*`` variables describing the event."""
    environment = dict((key, value) for key, value in base_environment.items()
                       if key not in ('NOTIFY_SOCKET', 'LISTEN_FDS', 'LISTEN_PID', 'LISTEN_FDNAMES'))
    environment.setdefault('PATH', '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin')
    duration = event.get('duration_in_seconds')
    environment.update({
        'SE_PHASE': phase,
        'SE_EVENT_ID': _text(event.get('event_id')),
        'SE_EVENT_TYPE': _text(event.get('event_type')),
        'SE_EVENT_STATUS': _text(event.get('event_status')),
        'SE_EVENT_SOURCE': _text(event.get('event_source')),
        'SE_RESOURCE_TYPE': _text(event.get('resource_type')),
        'SE_NOT_BEFORE': _text(event.get('not_before')),
        'SE_NOT_BEFORE_RAW': _text(event.get('not_before_raw')),
        'SE_DURATION_SECONDS': '' if duration is None else str(duration),
        'SE_DESCRIPTION': _text(event.get('description')),
        'SE_RESOURCES': ','.join(_text(name) for name in event.get('resources') or []),
        'SE_RESOURCE_NAME': _text(resource_name),
        'SE_IS_LEADER': 'true' if event.get('is_leader') else 'false',
        'SE_AFFECTS_THIS_VM': 'true' if event.get('affects_this_vm') else 'false',
        'SE_DOCUMENT_INCARNATION': '' if document_incarnation is None else str(document_incarnation),
    })
    return environment


def hook_input(phase, event, resource_name, document_incarnation):
    """The JSON document a hook reads on stdin."""
    return json.dumps({'phase': phase, 'resource_name': resource_name, 'is_leader': bool(event.get('is_leader')),
                       'affects_this_vm': bool(event.get('affects_this_vm')),
                       'document_incarnation': document_incarnation, 'event': event}, sort_keys=True).encode('utf-8')


def _collect_output(stream, chunks):
    kept = 0
    while True:
        data = stream.read(4096)
        if not data:
            break
        if kept < OUTPUT_LIMIT_BYTES:
            chunks.append(data[:OUTPUT_LIMIT_BYTES - kept])
            kept += len(chunks[-1])
    stream.close()


def _signal_group(process, signum):
    try:
        os.killpg(process.pid, signum)
    except OSError:
        pass


def run_hook(path, stdin_data, environment, timeout, abort=None):
    """Run one hook to its end or its ``timeout``; return a HookResult.

    ``abort`` (a threading.Event) ends the hook early, as at the timeout. The
    hook gets its own process group so that what it started ends with it.
    """
    try:
        check_trusted(path, require_executable=True)
    except InsecureFileError as exc:
        return HookResult(OUTCOME_REFUSED, message='refused to run: %s' % exc)
    started = time.monotonic()
    try:
        process = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   cwd='/', env=environment, close_fds=True, start_new_session=True)
    except OSError as exc:
        return HookResult(OUTCOME_FAILED, message='could not start: %s' % (exc.strerror or exc))
    chunks = []
    reader = threading.Thread(target=_collect_output, args=(process.stdout, chunks), name='hook-output')
    reader.daemon = True
    reader.start()
    try:
        process.stdin.write(stdin_data)
    except (BrokenPipeError, OSError):
        pass  # a hook that does not read its input is fine
    finally:
        try:
            process.stdin.close()
        except OSError:
            pass
    deadline = started + timeout
    timed_out = aborted = False
    while process.poll() is None:
        if abort is not None and abort.is_set():
            aborted = True
            break
        if time.monotonic() >= deadline:
            timed_out = True
            break
        try:
            process.wait(timeout=min(0.2, max(0.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            pass
    if timed_out or aborted:
        _signal_group(process, signal.SIGTERM)
        try:
            process.wait(timeout=KILL_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
            process.wait()
    reader.join(timeout=KILL_GRACE_SECONDS)
    output = b''.join(chunks).decode('utf-8', 'replace')
    duration = time.monotonic() - started
    if timed_out:
        return HookResult(OUTCOME_TIMEOUT, process.returncode, output, duration, 'timed out after %.0f s' % timeout)
    if aborted:
        return HookResult(OUTCOME_INTERRUPTED, process.returncode, output, duration, 'stopped: the service is shutting down')
    if process.returncode == 0:
        return HookResult(OUTCOME_OK, 0, output, duration, 'exited 0')
    return HookResult(OUTCOME_FAILED, process.returncode, output, duration, 'exited %d' % process.returncode)
