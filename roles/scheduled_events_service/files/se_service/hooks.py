# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Finding and running hooks.

Hooks are executables in ``<hooks_dir>/<phase>/``, run one after another in
lexical order of their names. They are started without a shell from an
argument list holding only their own path: event fields reach them as JSON
on stdin (complete) and as environment variables (each cut at
ENV_VALUE_LIMIT, since Linux refuses to start a program with a longer one),
never through a command line.

Each run is checked afresh: the hook, the file it resolves to and every
folder above them. At its time limit the hook's process group gets SIGTERM,
then SIGKILL, and so does every process still carrying the run's token in
its environment (children that left the group with ``setsid``); output is no
longer read past the time limit, whoever holds the pipe.
"""

import binascii
import json
import os
import selectors
import signal
import subprocess
import tempfile
import time

from .security import InsecureFileError, check_trusted, check_trusted_chain

# The first bytes of a Linux program (the other kind of file the kernel starts: a script with a #! line).
_ELF_MAGIC = b'\x7fELF'
# What the kernel reads of a #! line.
_SHEBANG_LIMIT = 256


class UnstartableHookError(InsecureFileError):
    """A hook the kernel cannot start (no #! line, an interpreter that is not there).

    Not a security matter, but refused where an untrusted hook is (``--check``
    and the start), so that it shows when installed, not at maintenance time.
    """


# Names run-parts and package managers leave behind; they are never run.
_IGNORED_SUFFIXES = ('~', '.disabled', '.dpkg-old', '.dpkg-dist', '.dpkg-new', '.dpkg-tmp', '.rpmnew', '.rpmsave',
                     '.rpmorig', '.swp', '.bak', '.orig')
# Enough output to debug a hook; a runaway one cannot fill memory or the log.
OUTPUT_LIMIT_BYTES = 64 * 1024
# Time a hook gets between SIGTERM and SIGKILL once its time is up.
KILL_GRACE_SECONDS = 5.0
# After the hook exits, how long output its leftover children write is still read.
OUTPUT_DRAIN_SECONDS = 0.5
# Longest value of one SE_* variable; Linux refuses any over 128 KiB
# (MAX_ARG_STRLEN). Longer values are cut and named in SE_TRUNCATED; stdin
# carries them whole.
ENV_VALUE_LIMIT = 16 * 1024
# Marks every process of one hook run, so that those that left its process group can be found.
RUN_TOKEN_VARIABLE = 'SE_HOOK_RUN_TOKEN'

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
            check_startable(check_trusted_chain(os.path.join(directory, name), require_executable=True))
        found[phase] = names
    return found


def check_startable(path):
    """Raise UnstartableHookError unless the kernel can start ``path``: a program, or a script whose #! names an interpreter that is there."""
    try:
        with open(path, 'rb') as handle:
            head = handle.read(_SHEBANG_LIMIT)
    except OSError as exc:
        raise UnstartableHookError('hook %s cannot be read (%s)' % (path, exc.strerror or exc))
    if head.startswith(_ELF_MAGIC):
        return
    if not head.startswith(b'#!'):
        raise UnstartableHookError('hook %s has no #! line and is no program, so it cannot be started (Exec format '
                                   'error); make its first line name its interpreter, such as #!/bin/sh' % path)
    line = head[2:].split(b'\n', 1)[0]
    if line.endswith(b'\r'):
        raise UnstartableHookError('the #! line of hook %s ends in a Windows line end (CR), so its interpreter is not '
                                   'found; run: sed -i \'s/\\r$//\' %s' % (path, path))
    words = line.split()
    interpreter = words[0].decode('utf-8', 'replace') if words else ''
    if not os.path.isabs(interpreter):
        raise UnstartableHookError('the #! line of hook %s names no interpreter by its full path (%r); write it as '
                                   'in #!/bin/sh' % (path, interpreter))
    if not os.path.isfile(interpreter) or not os.access(interpreter, os.X_OK):
        raise UnstartableHookError('the interpreter of hook %s, %s, is not there or cannot be run; install it or '
                                   'change the #! line' % (path, interpreter))


def _text(value):
    # The environment cannot carry NUL bytes; IMDS text could.
    return ('' if value is None else str(value)).replace('\0', '')


def _limited(environment):
    """Cut SE_* values longer than ENV_VALUE_LIMIT bytes; name them in SE_TRUNCATED."""
    truncated = []
    for key, value in environment.items():
        encoded = value.encode('utf-8', 'surrogateescape')
        if len(encoded) > ENV_VALUE_LIMIT:
            environment[key] = encoded[:ENV_VALUE_LIMIT].decode('utf-8', 'ignore')
            truncated.append(key)
    environment['SE_TRUNCATED'] = ','.join(sorted(truncated))
    return environment


def tristate(value):
    """True, False, or None for "not known yet" (this VM's name is not known, so the event is possibly ours)."""
    return None if value is None else bool(value)


def tristate_text(value):
    """``tristate`` for an environment variable: ``true``, ``false`` or ``unknown``."""
    known = tristate(value)
    return 'unknown' if known is None else ('true' if known else 'false')


def hook_environment(base_environment, phase, event, resource_name, document_incarnation):
    """The environment of a hook: the daemon's own plus the ``SE_*`` variables describing the event."""
    environment = dict((key, value) for key, value in base_environment.items()
                       if key not in ('NOTIFY_SOCKET', 'LISTEN_FDS', 'LISTEN_PID', 'LISTEN_FDNAMES',
                                      'CREDENTIALS_DIRECTORY', RUN_TOKEN_VARIABLE))
    environment.setdefault('PATH', '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin')
    duration = event.get('duration_in_seconds')
    environment.update(_limited({
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
        'SE_IS_LEADER': tristate_text(event.get('is_leader')),
        'SE_AFFECTS_THIS_VM': tristate_text(event.get('affects_this_vm')),
        'SE_DOCUMENT_INCARNATION': '' if document_incarnation is None else str(document_incarnation),
    }))
    return environment


def hook_input(phase, event, resource_name, document_incarnation):
    """The JSON document a hook reads on stdin.

    ``affects_this_vm`` and ``is_leader`` are null while this VM's name is not
    known: the event is possibly this VM's, and a hook must not read "no".
    """
    return json.dumps({'phase': phase, 'resource_name': resource_name, 'is_leader': tristate(event.get('is_leader')),
                       'affects_this_vm': tristate(event.get('affects_this_vm')),
                       'document_incarnation': document_incarnation, 'event': event}, sort_keys=True).encode('utf-8')


def _signal_group(process, signum):
    try:
        os.killpg(process.pid, signum)
    except OSError:
        pass


def processes_with_token(token, proc='/proc'):
    """pids of the processes whose environment holds ``RUN_TOKEN_VARIABLE=token`` (Linux /proc)."""
    marker = ('%s=%s' % (RUN_TOKEN_VARIABLE, token)).encode('ascii')
    found = []
    try:
        names = os.listdir(proc)
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(proc, name, 'environ'), 'rb') as handle:
                entries = handle.read().split(b'\0')
        except OSError:
            continue  # gone already, or not ours to read
        if marker in entries:
            found.append(int(name))
    return found


def _signal_run(process, token, signum):
    """Signal the hook's process group and every process that carries its run token."""
    _signal_group(process, signum)
    for pid in processes_with_token(token):
        try:
            os.kill(pid, signum)
        except OSError:
            pass


class _OutputReader(object):
    """Reads a hook's output without blocking, keeping the first OUTPUT_LIMIT_BYTES."""

    def __init__(self, stream):
        self.stream = stream
        self.chunks = []
        self.kept = 0
        self.closed = False
        os.set_blocking(stream.fileno(), False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(stream, selectors.EVENT_READ)

    def read_for(self, seconds):
        """Read what arrives within ``seconds``; return early at end of output."""
        end = time.monotonic() + max(0.0, seconds)
        while not self.closed:
            remaining = end - time.monotonic()
            if not self.selector.select(max(0.0, remaining)):
                if remaining <= 0:
                    return
                continue
            try:
                data = os.read(self.stream.fileno(), 65536)
            except BlockingIOError:
                continue
            if not data:
                self.close()
                return
            if self.kept < OUTPUT_LIMIT_BYTES:
                self.chunks.append(data[:OUTPUT_LIMIT_BYTES - self.kept])
                self.kept += len(self.chunks[-1])

    def close(self):
        if not self.closed:
            self.closed = True
            self.selector.close()
            self.stream.close()

    def text(self):
        return b''.join(self.chunks).decode('utf-8', 'replace')


def _input_file(stdin_data):
    """An unlinked temporary file holding ``stdin_data``: a hook may read it or not, at any size."""
    handle = tempfile.TemporaryFile()
    handle.write(stdin_data)
    handle.flush()
    handle.seek(0)
    return handle


def run_hook(path, stdin_data, environment, timeout, abort=None):
    """Run one hook to its end or its ``timeout``; return a HookResult.

    ``abort`` (a threading.Event) ends the hook early, as at the timeout.
    The hook, what it resolves to and every folder above are checked first.
    """
    try:
        check_trusted_chain(path, require_executable=True)
    except InsecureFileError as exc:
        return HookResult(OUTCOME_REFUSED, message='refused to run: %s' % exc)
    token = binascii.hexlify(os.urandom(16)).decode('ascii')
    environment = dict(environment, **{RUN_TOKEN_VARIABLE: token})
    started = time.monotonic()
    try:
        with _input_file(stdin_data) as stdin:
            process = subprocess.Popen([path], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       cwd='/', env=environment, close_fds=True, start_new_session=True)
    except OSError as exc:
        return HookResult(OUTCOME_FAILED, message='could not start: %s' % (exc.strerror or exc))
    output = _OutputReader(process.stdout)
    deadline = started + timeout
    timed_out = aborted = False
    while process.poll() is None:
        if abort is not None and abort.is_set():
            aborted = True
            break
        if time.monotonic() >= deadline:
            timed_out = True
            break
        output.read_for(min(0.2, max(0.0, deadline - time.monotonic())))
        if output.closed:
            # Output ended; wait for the exit itself without spinning.
            try:
                process.wait(timeout=min(0.2, max(0.0, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                pass
    if timed_out or aborted:
        # Stop reading at the deadline: a child that kept the pipe open must
        # not hold the service any longer.
        output.close()
        _signal_run(process, token, signal.SIGTERM)
        try:
            process.wait(timeout=KILL_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            pass
        _signal_run(process, token, signal.SIGKILL)
        process.wait()
    else:
        # Output written just before the exit is kept; a child left running
        # with the pipe open is not waited for.
        output.read_for(OUTPUT_DRAIN_SECONDS)
        output.close()
    duration = time.monotonic() - started
    text = output.text()
    if timed_out:
        return HookResult(OUTCOME_TIMEOUT, process.returncode, text, duration, 'timed out after %.0f s' % timeout)
    if aborted:
        return HookResult(OUTCOME_INTERRUPTED, process.returncode, text, duration, 'stopped: the service is shutting down')
    if process.returncode == 0:
        return HookResult(OUTCOME_OK, 0, text, duration, 'exited 0')
    return HookResult(OUTCOME_FAILED, process.returncode, text, duration, 'exited %d' % process.returncode)
