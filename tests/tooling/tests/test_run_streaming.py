# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""run_streaming (tests/rolling/rolling_harness.py): a line the run prints is in its log at once, and a run that
hangs silently is stopped at its deadline with everything it started.

Tests act on a line of a run that goes on (a change to the world once the
playbook has seen the last one), so the log must not hold lines back until
some kilobytes have gathered. The command here prints one line and then waits
for the test to have read it.
"""

import os
import signal
import sys
import threading
import time

import pytest

from stop_simulators import is_running, wait_until_stopped

ROLLING_TESTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                 'rolling')
if ROLLING_TESTS_DIR not in sys.path:
    sys.path.insert(0, ROLLING_TESTS_DIR)

from rolling_harness import run_streaming  # noqa: E402 pylint: disable=wrong-import-position

PRINT_THEN_WAIT = '''
import os, sys, time
print("the line the test waits for", flush=True)
deadline = time.monotonic() + 60
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.02)
print("seen" if os.path.exists(sys.argv[1]) else "never seen", flush=True)
'''


def test_a_printed_line_is_in_the_log_while_the_run_goes_on(tmp_path):
    log_path = str(tmp_path / 'run.log')
    seen_path = str(tmp_path / 'seen')
    codes = []
    runner = threading.Thread(target=lambda: codes.append(run_streaming(
        [sys.executable, '-c', PRINT_THEN_WAIT, seen_path], dict(os.environ), str(tmp_path), log_path, timeout=120)))
    runner.start()
    read_while_running = False
    try:
        deadline = time.monotonic() + 30
        while not read_while_running and time.monotonic() < deadline:
            if os.path.exists(log_path):
                with open(log_path, encoding='utf-8') as handle:
                    read_while_running = 'the line the test waits for' in handle.read()
            time.sleep(0.02)
        # The run only ends once this file is there, so what was read above was read while it ran.
        with open(seen_path, 'w', encoding='utf-8'):
            pass
    finally:
        runner.join(90)
    assert read_while_running, 'the line reached the log only when the run ended'
    assert codes == [0]
    with open(log_path, encoding='utf-8') as handle:
        assert handle.read() == 'the line the test waits for\nseen\n'


# Prints a line, starts a child that keeps the output open (as ansible's
# workers and modules do), notes its own pid and the child's, then either
# hangs without a word or ends at once, leaving the child behind.
HANG_SILENTLY = '''
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
with open(sys.argv[1], "w") as handle:
    handle.write("%d %d" % (os.getpid(), child.pid))
print("started, now silent", flush=True)
if sys.argv[2] == "hang":
    time.sleep(300)
'''


def run_until_silent(tmp_path, run_ends, timeout):
    """Run HANG_SILENTLY under run_streaming with ``timeout``; return its exit codes, its log's lines and its pids."""
    log_path = tmp_path / ('run-%d.log' % timeout)
    pids_path = tmp_path / ('pids-%d' % timeout)
    codes = []
    runner = threading.Thread(target=lambda: codes.append(run_streaming(
        [sys.executable, '-c', HANG_SILENTLY, str(pids_path), run_ends], dict(os.environ), str(tmp_path),
        str(log_path), timeout=timeout)), daemon=True)
    runner.start()
    runner.join(timeout + 50)
    assert not runner.is_alive(), 'run_streaming was still waiting 50 s after a %d s timeout' % timeout
    pids = [int(pid) for pid in pids_path.read_text().split()] if pids_path.exists() else []
    return codes, log_path.read_text(encoding='utf-8').splitlines(), pids


# The deadline must come after the command has started its child and said
# so: 2 s is plenty on an idle machine. Where a busy one is slower than that,
# the run is made again with twice the time, so the test waits only as long
# as the machine needs.
@pytest.mark.parametrize('run_ends, expected_code', [('hang', -signal.SIGKILL), ('end', 0)])
def test_a_silent_run_is_stopped_at_its_deadline_with_what_it_started(tmp_path, run_ends, expected_code):
    every_pid = []
    try:
        for timeout in (2, 4, 8, 16):
            codes, lines, pids = run_until_silent(tmp_path, run_ends, timeout)
            every_pid += pids
            if len(pids) == 2 and lines[:1] == ['started, now silent']:
                break
        assert lines[0] == 'started, now silent', 'the command did not start within 16 s: %s' % lines
        assert codes == [expected_code]
        assert lines[-1] == 'run_streaming: stopped after %d s (timeout), with every process it started' % timeout
        assert len(pids) == 2
        # SIGKILL is delivered at once, but a process may take a moment to end.
        assert [pid for pid in pids if not wait_until_stopped(pid, 10)] == [], 'a process of the run outlived it'
    finally:
        for pid in every_pid:
            if is_running(pid):
                os.kill(pid, signal.SIGKILL)
