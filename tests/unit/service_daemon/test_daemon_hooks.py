# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Running one hook: trust checked at each run, whole run killed at the deadline, any event size."""

import json
import os
import signal
import sys
import threading
import time

import pytest

from se_service import hooks
from se_service.hooks import (
    ENV_VALUE_LIMIT,
    KILL_GRACE_SECONDS,
    OUTCOME_OK,
    OUTCOME_REFUSED,
    OUTCOME_TIMEOUT,
    RUN_TOKEN_VARIABLE,
    hook_environment,
    hook_input,
    processes_with_token,
    run_hook,
)

EVENT = {'event_id': 'E1', 'event_type': 'Reboot', 'event_status': 'Scheduled', 'resources': ['vm0'],
         'description': 'planned', 'duration_in_seconds': -1, 'is_leader': True, 'affects_this_vm': True}
# Bounds a hung run_hook so that a regression fails instead of hanging the suite.
HANG_LIMIT_SECONDS = 60


@pytest.fixture
def base(tmp_path):
    os.chmod(str(tmp_path), 0o755)
    return tmp_path


def make_hook(path, body, mode=0o755):
    with open(str(path), 'w') as handle:
        handle.write('#!%s\nimport json, os, signal, subprocess, sys, time\n%s\n' % (sys.executable, body))
    os.chmod(str(path), mode)
    return str(path)


def run(path, event=None, timeout=20, environment=None):
    """run_hook in a thread, failing the test if it does not return within HANG_LIMIT_SECONDS."""
    event = EVENT if event is None else event
    outcome = {}

    def target():
        outcome['result'] = run_hook(path, hook_input('prepare', event, 'vm0', 7),
                                     hook_environment(environment or os.environ, 'prepare', event, 'vm0', 7), timeout)

    worker = threading.Thread(target=target)
    worker.daemon = True
    started = time.monotonic()
    worker.start()
    worker.join(HANG_LIMIT_SECONDS)
    assert not worker.is_alive(), 'run_hook did not return'
    return outcome['result'], time.monotonic() - started


def _alive(pid):
    try:
        with open('/proc/%d/stat' % pid) as handle:
            return handle.read().split(') ')[-1].split()[0] != 'Z'
    except OSError:
        return False


def test_a_description_over_128_kib_reaches_the_hook_whole_on_stdin(base):
    report = str(base / 'report.json')
    hook = make_hook(base / 'hook', '''
data = json.load(sys.stdin)
with open(%r, 'w') as out:
    json.dump({'stdin': len(data['event']['description']), 'env': len(os.environ['SE_DESCRIPTION']),
               'truncated': os.environ['SE_TRUNCATED']}, out)
''' % report)
    big = dict(EVENT, description='x' * (200 * 1024))
    result, dummy = run(hook, big)
    assert result.outcome == OUTCOME_OK, result.message
    with open(report) as handle:
        assert json.load(handle) == {'stdin': 200 * 1024, 'env': ENV_VALUE_LIMIT, 'truncated': 'SE_DESCRIPTION'}


def test_short_fields_are_not_marked_truncated():
    environment = hook_environment({'CREDENTIALS_DIRECTORY': '/run/credentials/x', 'HOME': '/root'}, 'recover',
                                   EVENT, 'vm0', 1)
    assert environment['SE_TRUNCATED'] == '' and environment['SE_DESCRIPTION'] == 'planned'
    # The webhook's secrets are the service's, not the hooks'.
    assert 'CREDENTIALS_DIRECTORY' not in environment and environment['HOME'] == '/root'


def test_a_hook_that_never_reads_a_large_input_still_times_out(base):
    hook = make_hook(base / 'hook', 'time.sleep(120)')
    big = dict(EVENT, description='y' * (1024 * 1024))
    result, dummy = run(hook, big, timeout=1)
    assert result.outcome == OUTCOME_TIMEOUT


def test_the_timeout_kills_a_child_that_left_the_process_group_and_output_stops_at_the_deadline(base):
    pid_file = str(base / 'child.pid')
    # The child starts its own session, ignores SIGTERM and keeps the output pipe open.
    hook = make_hook(base / 'hook', '''
child = subprocess.Popen([sys.executable, '-c', 'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); '
                          'print("child here", flush=True); time.sleep(120)'], start_new_session=True)
with open(%r, 'w') as out:
    out.write(str(child.pid))
print('parent waits', flush=True)
time.sleep(120)
''' % pid_file)
    result, duration = run(hook, timeout=2)
    assert result.outcome == OUTCOME_TIMEOUT
    with open(pid_file) as handle:
        child = int(handle.read())
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), 'the detached child survived the timeout'
    assert 'parent waits' in result.output
    # The parent ends at SIGTERM; nothing waits on the child's pipe afterwards.
    assert duration < 2 + KILL_GRACE_SECONDS


def test_a_hook_that_exits_leaving_a_child_on_the_pipe_is_not_waited_for(base):
    pid_file = str(base / 'child.pid')
    hook = make_hook(base / 'hook', '''
child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'], start_new_session=True)
with open(%r, 'w') as out:
    out.write(str(child.pid))
print('done')
''' % pid_file)
    result, dummy = run(hook, timeout=60)
    with open(pid_file) as handle:
        child = int(handle.read())
    try:
        assert result.outcome == OUTCOME_OK and result.output.strip() == 'done'
        # The child still holds the pipe: run_hook returned without waiting for it.
        assert _alive(child)
    finally:
        os.kill(child, signal.SIGKILL)


def test_processes_are_found_by_their_run_token(tmp_path):
    proc = tmp_path / 'proc'
    for pid, environ in (('12', b'A=1\0%s=abc\0' % RUN_TOKEN_VARIABLE.encode()), ('13', b'%s=abcd\0' % RUN_TOKEN_VARIABLE.encode()),
                         ('self', b'%s=abc\0' % RUN_TOKEN_VARIABLE.encode())):
        (proc / pid).mkdir(parents=True)
        (proc / pid / 'environ').write_bytes(environ)
    (proc / '14').mkdir()  # no environ readable: skipped
    assert processes_with_token('abc', str(proc)) == [12]


# -- trust, checked at every run ---------------------------------------------

@pytest.fixture
def hooks_tree(base):
    phase = base / 'hooks' / 'prepare'
    phase.mkdir(parents=True)
    os.chmod(str(base / 'hooks'), 0o755)
    os.chmod(str(phase), 0o755)
    return phase


def test_a_phase_folder_made_writable_after_the_start_check_refuses_its_hooks(base, hooks_tree):
    hook = make_hook(hooks_tree / '10-ok', 'pass')
    assert hooks.check_hooks(str(base / 'hooks'), ['prepare']) == {'prepare': ['10-ok']}
    assert run(hook)[0].outcome == OUTCOME_OK
    os.chmod(str(hooks_tree), 0o777)
    result, dummy = run(hook)
    assert result.outcome == OUTCOME_REFUSED and 'writable by group and others' in result.message


@pytest.mark.parametrize('folder_mode', [0o777, 0o1777])
def test_a_link_to_a_target_in_a_world_writable_folder_is_refused(base, hooks_tree, folder_mode):
    public = base / 'public'
    public.mkdir()
    os.chmod(str(public), folder_mode)
    target = make_hook(public / 'script', 'pass')
    os.symlink(target, str(hooks_tree / '20-linked'))
    result, dummy = run(str(hooks_tree / '20-linked'))
    assert result.outcome == OUTCOME_REFUSED and str(public) in result.message
    with pytest.raises(hooks.InsecureFileError):
        hooks.check_hooks(str(base / 'hooks'), ['prepare'])


def test_a_link_to_a_trusted_target_runs_even_below_a_sticky_folder(base, hooks_tree):
    # /tmp-like: others may add entries to a sticky folder but not replace root's.
    sticky = base / 'sticky'
    sticky.mkdir()
    os.chmod(str(sticky), 0o1777)
    private = sticky / 'private'
    private.mkdir()
    os.chmod(str(private), 0o755)
    os.symlink(make_hook(private / 'script', 'pass'), str(hooks_tree / '30-linked'))
    assert run(str(hooks_tree / '30-linked'))[0].outcome == OUTCOME_OK


def test_a_link_to_a_target_owned_by_someone_else_is_refused(base, hooks_tree):
    if os.geteuid() != 0:
        pytest.skip('needs root to give a file to another owner')
    other = base / 'other'
    other.mkdir()
    target = make_hook(other / 'script', 'pass')
    os.chown(target, 65534, 65534)
    os.symlink(target, str(hooks_tree / '40-linked'))
    result, dummy = run(str(hooks_tree / '40-linked'))
    assert result.outcome == OUTCOME_REFUSED and 'owned by uid 65534' in result.message


def test_the_time_limit_sends_sigterm_first(base):
    hook = make_hook(base / 'hook', '''
signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))
time.sleep(120)
''')
    result, dummy = run(hook, timeout=2)
    # 143: the handler ran; -SIGTERM: the signal came before the handler was set (a slow start).
    assert result.outcome == OUTCOME_TIMEOUT and result.exit_code in (143, -signal.SIGTERM)


@pytest.mark.parametrize('known, stdin_value, env_value', [
    (True, True, 'true'),
    (False, False, 'false'),
    # The VM's name is not known yet: possibly this VM's event, never "no".
    (None, None, 'unknown'),
])
def test_whether_the_event_is_ours_keeps_unknown_on_stdin_and_in_the_environment(known, stdin_value, env_value):
    event = dict(EVENT, affects_this_vm=known, is_leader=known)
    document = json.loads(hook_input('prepare', event, None if known is None else 'vm0', 7).decode('utf-8'))
    assert document['affects_this_vm'] is stdin_value and document['is_leader'] is stdin_value
    assert document['event']['affects_this_vm'] is stdin_value
    environment = hook_environment({}, 'prepare', event, None if known is None else 'vm0', 7)
    assert environment['SE_AFFECTS_THIS_VM'] == env_value and environment['SE_IS_LEADER'] == env_value


@pytest.mark.parametrize('content, message', [
    (b'echo draining\n', 'has no #! line'),
    (b'#!/bin/sh\r\necho draining\r\n', 'Windows line end'),
    (b'#!/no/such/interpreter\necho draining\n', 'is not there'),
    (b'#!sh\necho draining\n', 'by its full path'),
    (b'#!/bin/sh\necho draining\n', None),
    (b'#! /bin/sh -e\necho draining\n', None),
])
def test_a_hook_the_kernel_could_not_start_is_refused_by_the_check(base, hooks_tree, content, message):
    # Found when installed (--check, start), not when maintenance comes and
    # the hook "could not start": a failed prepare blocks the approval.
    path = hooks_tree / '10-drain'
    path.write_bytes(content)
    os.chmod(str(path), 0o755)
    if message is None:
        assert hooks.check_hooks(str(base / 'hooks'), ['prepare']) == {'prepare': ['10-drain']}
    else:
        with pytest.raises(hooks.UnstartableHookError, match=message):
            hooks.check_hooks(str(base / 'hooks'), ['prepare'])


def test_a_program_is_a_startable_hook(base, hooks_tree):
    import shutil
    shutil.copy('/bin/true', str(hooks_tree / '10-program'))
    os.chmod(str(hooks_tree / '10-program'), 0o755)
    assert hooks.check_hooks(str(base / 'hooks'), ['prepare']) == {'prepare': ['10-program']}
