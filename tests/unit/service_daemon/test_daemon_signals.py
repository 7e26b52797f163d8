# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Signals reach the daemon's loop whatever its main thread holds when they arrive."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading


ROLE_FILES = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'roles',
                                           'scheduled_events_service', 'files'))
# A deadlocked child is killed after this and the test fails.
HANG_LIMIT_SECONDS = 30

# The main thread holds the lock of the daemon's own Events at the moment the
# signal arrives, as it does for an instant in every wake.wait() and
# wake.clear(). A handler that set an Event itself would wait there for ever.
CHILD = r'''
import json, logging, os, signal, sys, time
sys.path.insert(0, sys.argv[1])
from se_service.config import validate_config
from se_service.engine import Service

work = sys.argv[2]
config = validate_config({'state_file': os.path.join(work, 'state.json'), 'hooks_dir': os.path.join(work, 'hooks'),
                          'resource_name': 'vm0'})
service = Service(config, os.path.join(work, 'config.json'), logging.getLogger('signals-test'))
service.install_signal_handlers()
results = {}
for name, signum, held, flag in (('reload', signal.SIGHUP, service.wake, service.reload_requested),
                                 ('stop', signal.SIGTERM, service.wake, service.stopping),
                                 ('second stop', signal.SIGTERM, service.work_available, service.abort_hooks)):
    with held._cond:
        os.kill(os.getpid(), signum)
        time.sleep(0.2)  # the interpreter runs Python signal handlers here, with the lock held
    results[name] = flag.wait(10)
results['woken'] = service.wake.is_set() and service.work_available.is_set()
print(json.dumps(results))
'''


def test_signals_arriving_while_the_main_thread_holds_an_event_lock_are_acted_on(tmp_path):
    result = subprocess.run([sys.executable, '-c', CHILD, ROLE_FILES, str(tmp_path)],
                            capture_output=True, text=True, timeout=HANG_LIMIT_SECONDS, check=False)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {'reload': True, 'stop': True, 'second stop': True, 'woken': True}


# The command line's start: the configuration and state are being read when
# the signals arrive (the first load_config sends them to its own process).
# Before the relay was installed first, a SIGHUP there took Python's default
# action and ended the process.
STARTING_CHILD = r'''
import os, signal, sys
sys.path.insert(0, sys.argv[1])
from se_service import cli, config as config_module

work, early = sys.argv[2], [getattr(signal, name) for name in sys.argv[3].split(',')]
real_load_config = config_module.load_config
loaded = []

def load_config_while_signalled(path, **kwargs):
    if not loaded:
        for signum in early:
            os.kill(os.getpid(), signum)
    loaded.append(path)
    return real_load_config(path, **kwargs)

config_module.load_config = load_config_while_signalled
sys.exit(cli.run_service(os.path.join(work, 'config.json')))
'''


@contextlib.contextmanager
def started_while_signalled(work, early_signals):
    """The service started by the command line, sent ``early_signals`` while it loads its configuration.

    Killed after HANG_LIMIT_SECONDS whatever the test is waiting for (its output ends then), and at the end.
    """
    hooks = work / 'hooks'
    for phase in ('prepare', 'started', 'recover'):
        (hooks / phase).mkdir(parents=True)
    # Nothing listens on port 9 of loopback: polls fail at once, which the service logs and survives.
    (work / 'config.json').write_text(json.dumps({
        'endpoint': 'http://127.0.0.1:9/metadata/scheduledevents', 'resource_name': 'vm0', 'poll_interval': 1,
        'state_file': str(work / 'state.json'), 'hooks_dir': str(hooks), 'log': {'format': 'text', 'level': 'info'}}))
    process = subprocess.Popen([sys.executable, '-c', STARTING_CHILD, ROLE_FILES, str(work), ','.join(early_signals)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    watchdog = threading.Timer(HANG_LIMIT_SECONDS, process.kill)
    watchdog.start()
    try:
        yield process
    finally:
        watchdog.cancel()
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=HANG_LIMIT_SECONDS)


def output_until(process, wanted):
    """The child's output up to the first line containing ``wanted`` (all of it if the child ends first)."""
    lines = []
    for line in process.stdout:
        lines.append(line)
        if wanted in line:
            break
    return ''.join(lines)


def test_a_reload_asked_while_the_service_starts_is_a_reload_once_it_runs(tmp_path):
    with started_while_signalled(tmp_path, ['SIGHUP', 'SIGHUP']) as process:
        started = output_until(process, 'configuration reloaded from')
        assert process.poll() is None, 'the service ended at start (status %s):\n%s' % (process.returncode, started)
        process.send_signal(signal.SIGTERM)
        rest, dummy = process.communicate(timeout=HANG_LIMIT_SECONDS)
    assert process.returncode == 0, started + rest
    assert 'stopped; state saved' in rest


def test_a_stop_asked_while_the_service_starts_stops_it_cleanly_once_it_runs(tmp_path):
    with started_while_signalled(tmp_path, ['SIGHUP', 'SIGTERM']) as process:
        output, dummy = process.communicate(timeout=HANG_LIMIT_SECONDS)
    assert process.returncode == 0, output
    assert 'stopped; state saved' in output
    assert json.loads((tmp_path / 'state.json').read_text())['events'] == {}


# The relay alone: what it kept before it had actions is acted on once each, in order.
RELAY_CHILD = r'''
import json, os, signal, sys, time
sys.path.insert(0, sys.argv[1])
from se_service.signals import SignalRelay

relay = SignalRelay()
relay.install()
for signum in (signal.SIGHUP, signal.SIGTERM, signal.SIGHUP):
    os.kill(os.getpid(), signum)
deadline = time.monotonic() + 20
while len(relay.kept) < 2 and time.monotonic() < deadline:
    time.sleep(0.01)
acted = []
kept = relay.act_with({signal.SIGHUP: lambda: acted.append('reload'), signal.SIGTERM: lambda: acted.append('stop')})
os.kill(os.getpid(), signal.SIGHUP)
while len(acted) < 3 and time.monotonic() < deadline:
    time.sleep(0.01)
print(json.dumps({'kept': [signal.Signals(signum).name for signum in kept], 'acted': acted}))
'''


def test_signals_the_relay_kept_before_it_had_actions_are_acted_on_once_each_in_order():
    result = subprocess.run([sys.executable, '-c', RELAY_CHILD, ROLE_FILES],
                            capture_output=True, text=True, timeout=HANG_LIMIT_SECONDS, check=False)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {'kept': ['SIGHUP', 'SIGTERM'], 'acted': ['reload', 'stop', 'reload']}
