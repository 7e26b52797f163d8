"""Command line: run the simulator in the foreground, in the background, or stop it."""

import argparse
import copy
import json
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time

from .arm_server import ArmFacade, validate_arm_settings
from .clock import check_speed
from .config import DEFAULT_CONFIG, ConfigError, format_listen, load_config_file, parse_listen, validate_config
from .simulator import Simulator

__all__ = ['DEFAULT_CONTROL', 'default_ports', 'main']

# Where the control API listens without --control: handy by hand; tests pass port 0.
DEFAULT_CONTROL = '127.0.0.1:18079'

_SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'imds-simulator')
_START_TIMEOUT_SECONDS = 20
_STOP_TIMEOUT_SECONDS = 10


def default_ports():
    """The fixed ports a simulator started without --config and --control listens on."""
    addresses = [(DEFAULT_CONTROL, 'control')] + [(vm['listen'], 'listen') for vm in DEFAULT_CONFIG['vms']]
    return [parse_listen(address, field)[1] for address, field in addresses]


def _parser():
    parser = argparse.ArgumentParser(
        prog='imds-simulator',
        description='Simulate the Azure IMDS Scheduled Events endpoint of several VMs on loopback. '
                    'See docs/simulator.md.')
    parser.add_argument('--config', metavar='FILE.json', help='world configuration (default: VMs WestNO_0 '
                        'and WestNO_1 at 127.0.0.1:18101 and :18102)')
    parser.add_argument('--control', metavar='HOST:PORT', default=DEFAULT_CONTROL,
                        help='loopback address of the control API (default: %(default)s)')
    parser.add_argument('--speed', type=float, metavar='FACTOR',
                        help='simulated seconds per real second (overrides the config)')
    parser.add_argument('--background', action='store_true',
                        help='detach, wait until every port answers, print the pid and exit')
    parser.add_argument('--stop', action='store_true', help='stop the simulator whose pid is in --pidfile')
    parser.add_argument('--pidfile', metavar='PATH', help='pid file (required with --background and --stop)')
    parser.add_argument('--ready-file', metavar='PATH',
                        help='once every port is bound, write {"pid", "control", "vms": {name: "HOST:PORT"}} '
                             'as JSON here (how callers learn the ports chosen for port 0)')
    parser.add_argument('--arm', metavar='HOST:PORT',
                        help='also serve the ARM facade (Resource Graph, acknowledge, Event Grid) of the same world '
                             'here; port 0 lets the kernel choose; the ready file says where as "arm"')
    parser.add_argument('--arm-settings', metavar='FILE.json',
                        help='ARM facade settings (tokens, quota, paging, Event Grid webhook); see docs/simulator.md')
    parser.add_argument('--stop-with', type=int, metavar='PID',
                        help='stop once process PID has ended (tests give their own pid, so a test process that is '
                             'killed leaves no simulator running)')
    parser.add_argument('--log-file', metavar='PATH',
                        help='where a --background simulator logs (default: the pid file path + ".log")')
    parser.add_argument('--log-level', default='INFO', choices=('DEBUG', 'INFO', 'WARNING', 'ERROR'),
                        type=str.upper, help='log verbosity (default: %(default)s)')
    return parser


def _fail(message, code=1):
    print('imds-simulator: error: %s' % message, file=sys.stderr)
    return code


def _load_config(args):
    if args.config:
        config = load_config_file(args.config)
    else:
        config = validate_config(copy.deepcopy(DEFAULT_CONFIG))
    if args.speed is not None:
        try:
            config['speed'] = check_speed(args.speed)
        except ValueError as exc:
            raise ConfigError('--speed: %s' % exc) from None
    return config


def _read_pid(pidfile):
    try:
        with open(pidfile, encoding='ascii') as handle:
            text = handle.read().strip()
    except FileNotFoundError:
        return None
    if not text.isdigit():
        raise ConfigError('pid file %s does not hold a pid (%r); remove it' % (pidfile, text[:40]))
    return int(text)


def _is_simulator(pid):
    """True if ``pid`` runs this simulator (a pid reused by another program is not ours)."""
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as handle:
            command_line = handle.read()
    except OSError:
        return False
    return b'imds-simulator' in command_line or b'imds_simulator' in command_line


class Owner:
    """The process a simulator runs for (``--stop-with PID``): the simulator stops once it has ended.

    A test that is killed (SIGKILL, a runner's time-out) cannot stop what it
    started; without this its simulator would run on, holding its ports. On
    Linux a pidfd names that very process, so a pid the kernel hands to a new
    process later is never mistaken for the owner; elsewhere the pid is
    checked with signal 0.
    """

    def __init__(self, pid):
        if pid < 1:
            raise ConfigError('--stop-with: %d is not a process id; give the pid of the process the simulator '
                              'runs for' % pid)
        self.pid = pid
        self._pidfd = None
        try:
            self._pidfd = os.pidfd_open(pid)
            running = True
        except ProcessLookupError:
            running = False
        except (AttributeError, OSError):
            # No pidfd_open on this platform, or an old kernel (ENOSYS): signal 0 it is.
            running = _process_exists(pid)
        if not running:
            raise ConfigError('--stop-with: no process has pid %d; give the pid of a process that runs' % pid)

    def ended(self):
        """True once the owner has ended (a pidfd becomes readable then)."""
        if self._pidfd is not None:
            readable, _writable, _failed = select.select([self._pidfd], [], [], 0)
            return bool(readable)
        return not _process_exists(self.pid)

    def close(self):
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


def _process_exists(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it runs, as another user
    return True


def _remove_pidfile(pidfile, pid):
    try:
        if _read_pid(pidfile) == pid:
            os.unlink(pidfile)
    except (OSError, ConfigError):
        pass


def _write_pidfile(pidfile, pid):
    directory = os.path.dirname(os.path.abspath(pidfile))
    os.makedirs(directory, exist_ok=True)
    temporary = '%s.%d.tmp' % (pidfile, pid)
    with open(temporary, 'w', encoding='ascii') as handle:
        handle.write('%d\n' % pid)
    os.replace(temporary, pidfile)


def _write_ready_file(path, simulator, arm=None):
    """Say where everything listens, atomically, so a reader never sees half a file."""
    ready = {'pid': os.getpid(), 'control': format_listen(simulator.control_address),
             'vms': {vm['name']: vm['listen'] for vm in simulator.world.config['vms']}}
    if arm is not None:
        ready['arm'] = format_listen(arm.address)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    temporary = '%s.%d.tmp' % (path, os.getpid())
    with open(temporary, 'w', encoding='utf-8') as handle:
        json.dump(ready, handle)
    os.replace(temporary, path)


def read_ready_file(path):
    """The ready file's content, or None while it is missing or being replaced."""
    try:
        with open(path, encoding='utf-8') as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def stop(pidfile):
    pid = _read_pid(pidfile)
    if pid is None:
        print('imds-simulator: no pid file %s, nothing to stop' % pidfile)
        return 0
    if not _is_simulator(pid):
        os.unlink(pidfile)
        print('imds-simulator: pid %d from %s is not running (stale pid file removed)' % (pid, pidfile))
        return 0
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + _STOP_TIMEOUT_SECONDS
    while time.monotonic() < deadline and _is_simulator(pid):
        time.sleep(0.1)
    if _is_simulator(pid):
        os.kill(pid, signal.SIGKILL)
        print('imds-simulator: pid %d ignored SIGTERM for %ds and was killed' % (pid, _STOP_TIMEOUT_SECONDS),
              file=sys.stderr)
    _remove_pidfile(pidfile, pid)
    print('imds-simulator: stopped pid %d' % pid)
    return 0


def _start_background(args, config, argv):
    pidfile = os.path.abspath(args.pidfile)
    running = _read_pid(pidfile)
    if running is not None and _is_simulator(running):
        return _fail('a simulator already runs with pid %d (pid file %s); stop it with --stop --pidfile %s'
                     % (running, pidfile, pidfile))
    # A new machine has none of these folders yet.
    os.makedirs(os.path.dirname(pidfile), exist_ok=True)
    log_file = os.path.abspath(args.log_file or pidfile + '.log')
    os.makedirs(os.path.dirname(log_file), exist_ok=True)
    ready_file = os.path.abspath(args.ready_file or pidfile + '.ready.json')
    child_args = _absolute_paths(_without_options(argv, ('--background',), ('--log-file', '--ready-file')))
    with open(log_file, 'ab') as log_handle:
        child = subprocess.Popen([sys.executable, _SCRIPT] + child_args
                                 + ['--log-file', log_file, '--ready-file', ready_file],
                                 stdin=subprocess.DEVNULL, stdout=log_handle, stderr=log_handle,
                                 start_new_session=True, close_fds=True)
    deadline = time.monotonic() + _START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if child.poll() is not None:
            return _fail('the simulator exited with code %d while starting:\n%s'
                         % (child.returncode, _tail(log_file)))
        # The child writes the ready file only after every port was bound
        # (ports chosen for port 0 included), so its pid proves it is ours.
        ready = read_ready_file(ready_file)
        if ready is not None and ready.get('pid') == child.pid and _read_pid(pidfile) == child.pid:
            print(child.pid)
            return 0
        time.sleep(0.1)
    child.kill()
    child.wait(timeout=5)
    return _fail('the simulator did not answer on all ports within %ds; see %s' % (_START_TIMEOUT_SECONDS, log_file))


def _without_options(argv, flags, valued):
    """``argv`` minus the ``flags`` and the ``valued`` options with their values."""
    result, skip_next = [], False
    for arg in argv:
        if skip_next:
            skip_next = False
        elif arg in flags or any(arg.startswith(option + '=') for option in valued):
            continue
        elif arg in valued:
            skip_next = True
        else:
            result.append(arg)
    return result


def _absolute_paths(argv):
    result, make_absolute = [], False
    for arg in argv:
        if make_absolute:
            arg = os.path.abspath(arg)
        make_absolute = arg in ('--config', '--pidfile', '--log-file', '--ready-file', '--arm-settings')
        for option in ('--config=', '--pidfile=', '--log-file=', '--ready-file=', '--arm-settings='):
            if arg.startswith(option):
                arg = option + os.path.abspath(arg[len(option):])
        result.append(arg)
    return result


def _tail(path, lines=15):
    try:
        with open(path, encoding='utf-8', errors='replace') as handle:
            return ''.join(handle.readlines()[-lines:]).rstrip()
    except OSError:
        return '(no log at %s)' % path


def _load_arm_settings(path):
    if path is None:
        return None
    try:
        with open(path, encoding='utf-8') as handle:
            return json.load(handle)
    except OSError as exc:
        raise ConfigError('cannot read --arm-settings file %s: %s' % (path, exc.strerror or exc)) from None
    except ValueError as exc:
        raise ConfigError('--arm-settings file %s is not valid JSON: %s' % (path, exc)) from None


def _run_foreground(args, config):
    stopping = threading.Event()
    owner = Owner(args.stop_with) if args.stop_with is not None else None
    simulator = Simulator(config, args.control)
    arm = None
    if args.arm:
        arm = ArmFacade(simulator, args.arm, _load_arm_settings(args.arm_settings))
    try:
        simulator.start()
        if arm is not None:
            try:
                arm.start()
            except OSError as exc:
                simulator.stop()
                return _fail('cannot listen on %s for the ARM facade: %s' % (args.arm, exc.strerror or exc))
    except OSError as exc:
        return _fail(exc.strerror or str(exc))
    if args.pidfile:
        _write_pidfile(args.pidfile, os.getpid())
    if args.ready_file:
        _write_ready_file(args.ready_file, simulator, arm)

    def request_stop(signum, frame):
        logging.getLogger('imds_simulator').info('signal %d: stopping', signum)
        stopping.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    try:
        # A timed wait keeps the main thread responsive to signals.
        while not stopping.wait(0.5):
            if owner is not None and owner.ended():
                logging.getLogger('imds_simulator').info('process %d (--stop-with) has ended: stopping', owner.pid)
                break
    finally:
        if owner is not None:
            owner.close()
        if arm is not None:
            arm.stop()
        simulator.stop()
        if args.pidfile:
            _remove_pidfile(args.pidfile, os.getpid())
        if args.ready_file and (read_ready_file(args.ready_file) or {}).get('pid') == os.getpid():
            os.unlink(args.ready_file)
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    logging.basicConfig(level=getattr(logging, args.log_level), filename=args.log_file if not args.background else None,
                        format='%(asctime)s %(levelname)s %(name)s: %(message)s')
    if (args.background or args.stop) and not args.pidfile:
        return _fail('--%s needs --pidfile PATH' % ('background' if args.background else 'stop'), 2)
    if args.background and args.stop:
        return _fail('give --background or --stop, not both', 2)
    try:
        if args.stop:
            return stop(args.pidfile)
        parse_listen(args.control, '--control')
        if args.arm:
            parse_listen(args.arm, '--arm')
            validate_arm_settings(_load_arm_settings(args.arm_settings) or {})
        elif args.arm_settings:
            return _fail('--arm-settings needs --arm HOST:PORT', 2)
        config = _load_config(args)
        if args.background and args.stop_with is not None:
            # The detached child checks it too (_run_foreground), but only this
            # process's message reaches the caller.
            Owner(args.stop_with).close()
        if args.background:
            return _start_background(args, config, argv)
        return _run_foreground(args, config)
    except ConfigError as exc:
        return _fail(str(exc), 2)


if __name__ == '__main__':
    sys.exit(main())
