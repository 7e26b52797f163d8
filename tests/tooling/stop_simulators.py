"""Stop every IMDS simulator that tests started, using their pidfiles.

Convention: a test or integration target that starts tests/simulator/imds-simulator
in the background writes its pidfile as ``<name>.pid`` in a folder of its own
run (the setup_simulator integration target: ``tests/output/.tmp/imds-simulator/``
of the collection copy under test). The runners call this script with that
folder after the tests, so nothing is left running; no folder is shared between
runs, so one run never stops another's simulator.

A pid is only signalled when its command line names the simulator, so a pidfile
whose process is gone and whose pid was reused never stops another program.
Run with the project's Python: ``.venv/bin/python tests/tooling/stop_simulators.py FOLDER``.
"""

from __future__ import annotations

import glob
import os
import signal
import sys
import time

SIMULATOR_NAMES = (b'imds-simulator', b'imds_simulator')
GRACE_SECONDS = 10.0
KILL_WAIT_SECONDS = 5.0
POLL_SECONDS = 0.1


def read_pid(pidfile: str) -> int | None:
    """Return the pid stored in pidfile, or None when it holds no valid pid."""
    try:
        with open(pidfile, encoding='ascii') as handle:
            pid = int(handle.read().strip())
    except (OSError, ValueError):
        return None

    return pid if pid > 1 else None


def is_running(pid: int) -> bool:
    """Return True while pid is a live process (zombies count as stopped)."""
    try:
        with open(f'/proc/{pid}/stat', 'rb') as handle:
            # The state follows the parenthesised command name, which may hold spaces.
            state = handle.read().rsplit(b')', 1)[1].split()[0]
    except (OSError, IndexError):
        return False

    return state not in (b'Z', b'X')


def is_simulator(pid: int) -> bool:
    """Return True when pid's command line names the IMDS simulator."""
    try:
        with open(f'/proc/{pid}/cmdline', 'rb') as handle:
            command_line = handle.read()
    except OSError:
        return False

    return any(name in command_line for name in SIMULATOR_NAMES)


def wait_until_stopped(pid: int, seconds: float) -> bool:
    """Wait up to seconds for pid to exit; return True if it did."""
    deadline = time.monotonic() + seconds

    while time.monotonic() < deadline:
        if not is_running(pid):
            return True
        time.sleep(POLL_SECONDS)

    return not is_running(pid)


def stop(pid: int) -> bool:
    """Stop pid with SIGTERM, then SIGKILL after a grace period; return True once it is gone."""
    for sig, wait_seconds in ((signal.SIGTERM, GRACE_SECONDS), (signal.SIGKILL, KILL_WAIT_SECONDS)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return True

        if wait_until_stopped(pid, wait_seconds):
            return True

    return False


def stop_from_pidfile(pidfile: str) -> bool:
    """Stop the simulator recorded in pidfile and remove the file; return False if it would not stop."""
    pid = read_pid(pidfile)

    if pid is None:
        print(f'Removing unreadable simulator pidfile {pidfile}.')
    elif not is_running(pid):
        print(f'Removing stale simulator pidfile {pidfile} (pid {pid} is gone).')
    elif not is_simulator(pid):
        print(f'Removing simulator pidfile {pidfile}: pid {pid} is now another program, left running.')
    elif stop(pid):
        print(f'Stopped simulator pid {pid} ({pidfile}).')
    else:
        print(f'Simulator pid {pid} ({pidfile}) did not stop, even after SIGKILL.', file=sys.stderr)
        return False

    try:
        os.unlink(pidfile)
    except FileNotFoundError:
        pass  # the simulator removes its own pidfile when it exits cleanly

    return True


def stop_all(run_directory: str) -> bool:
    """Stop every simulator with a pidfile in run_directory; return False if one would not stop."""
    pidfiles = sorted(glob.glob(os.path.join(run_directory, '*.pid')))
    results = [stop_from_pidfile(pidfile) for pidfile in pidfiles]

    return all(results)


def main(argv: list[str]) -> int:
    """Stop all simulators with a pidfile in each folder named on the command line."""
    if not argv:
        print('usage: stop_simulators.py FOLDER [FOLDER ...]  (folders holding simulator pid files)',
              file=sys.stderr)
        return 2
    results = [stop_all(folder) for folder in argv]
    return 0 if all(results) else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
