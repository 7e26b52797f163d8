# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Signals reach the daemon's loop whatever its main thread holds when they arrive."""

import json
import os
import subprocess
import sys


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
