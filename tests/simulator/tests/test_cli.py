"""The imds-simulator command: foreground with signals, --background, --stop, start errors."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import SCRIPT
from imds_simulator.control_client import SimulatorControl, imds_get


def write_config(tmp_path, **extra):
    config = {'vms': [{'name': 'cli_0', 'listen': '127.0.0.1:0'},
                      {'name': 'cli_1', 'listen': '127.0.0.1:0'}]}
    config.update(extra)
    path = tmp_path / 'world.json'
    path.write_text(json.dumps(config))
    return path, config


def run(*args, timeout=30):
    return subprocess.run([sys.executable, SCRIPT] + list(args), capture_output=True, text=True, timeout=timeout,
                          check=False)


def is_gone(pid):
    """True once ``pid`` has ended (a zombie waiting for its reaper has ended too)."""
    try:
        with open('/proc/%d/stat' % pid, encoding='ascii') as handle:
            return handle.read().rsplit(')', 1)[1].split()[0] in ('Z', 'X')
    except OSError:
        return True


def ends_within(pid, seconds):
    """True once ``pid`` has ended (``is_gone``), False if it still runs after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not is_gone(pid):
        time.sleep(0.1)
    return is_gone(pid)


@pytest.fixture
def background(tmp_path):
    """Start a --background simulator; it is stopped (and checked gone) afterwards."""
    pidfile = tmp_path / 'sim.pid'
    started = []

    def start(*args):
        result = run('--background', '--pidfile', str(pidfile), *args)
        if result.returncode == 0:
            started.append(int(result.stdout.strip()))
        return result

    yield start, pidfile
    for pid in started:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and os.path.exists('/proc/%d' % pid):
            time.sleep(0.05)


def test_background_start_and_stop(tmp_path, background):
    start, pidfile = background
    config_path, config = write_config(tmp_path)
    result = start('--config', str(config_path), '--control', '127.0.0.1:0', '--speed', '50')
    assert result.returncode == 0, result.stderr
    pid = int(result.stdout.strip())
    assert int(pidfile.read_text()) == pid
    # Without --ready-file a background simulator still writes one next to its pid file.
    ready = json.loads((tmp_path / 'sim.pid.ready.json').read_text())
    control = ready['control']
    client = SimulatorControl('http://' + control)
    assert client.health() == {'ok': True}
    assert client.clock()['speed'] == 50
    status, document = imds_get('http://' + ready['vms']['cli_1'])
    assert (status, document) == (200, {'DocumentIncarnation': 1, 'Events': []})
    again = start('--config', str(config_path), '--control', control)
    assert again.returncode != 0 and 'already runs' in again.stderr
    stopped = run('--stop', '--pidfile', str(pidfile))
    assert stopped.returncode == 0 and 'stopped' in stopped.stdout
    assert not pidfile.exists()
    assert is_gone(pid)
    with pytest.raises(OSError):
        socket.create_connection(('127.0.0.1', int(control.rsplit(':', 1)[1])), timeout=1).close()
    assert run('--stop', '--pidfile', str(pidfile)).returncode == 0


def test_background_fails_clearly_when_a_port_is_in_use(tmp_path, background):
    start, pidfile = background
    busy = socket.socket()
    busy.bind(('127.0.0.1', 0))
    busy.listen(1)
    try:
        port = busy.getsockname()[1]
        config_path, dummy = write_config(tmp_path, vms=[{'name': 'x', 'listen': '127.0.0.1:%d' % port}])
        result = start('--config', str(config_path), '--control', '127.0.0.1:0')
        assert result.returncode != 0
        assert str(port) in result.stderr and 'cannot listen' in result.stderr
        assert not pidfile.exists()
    finally:
        busy.close()


def test_bad_config_exits_2_naming_the_field(tmp_path):
    path = tmp_path / 'bad.json'
    path.write_text(json.dumps({'vms': [{'name': 'x', 'listen': '10.1.1.1:80'}]}))
    result = run('--config', str(path))
    assert result.returncode == 2
    assert 'vms[0].listen' in result.stderr and 'loopback' in result.stderr
    assert run('--background').returncode == 2
    assert run('--control', '8.8.8.8:53').returncode == 2


def test_foreground_default_world_stops_on_sigterm_and_sigint(tmp_path):
    # The default world needs 18101/18102; skip rather than fight a
    # simulator a developer left running.
    for port in (18101, 18102):
        with socket.socket() as probe:
            if probe.connect_ex(('127.0.0.1', port)) == 0:
                pytest.skip('127.0.0.1:%d is busy' % port)
    for signum in (signal.SIGTERM, signal.SIGINT):
        pidfile = tmp_path / ('fg%d.pid' % signum)
        ready_file = tmp_path / ('fg%d.ready.json' % signum)
        process = subprocess.Popen([sys.executable, SCRIPT, '--control', '127.0.0.1:0', '--pidfile', str(pidfile),
                                    '--ready-file', str(ready_file)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 20
            while not ready_file.exists() and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if process.poll() is not None and b'cannot listen' in process.communicate(timeout=10)[1]:
                pytest.skip('the default world\'s ports 18101/18102 were taken meanwhile')
            client = SimulatorControl('http://' + json.loads(ready_file.read_text())['control'])
            client.wait_until_up(timeout=10)
            names = [vm['name'] for vm in client.state()['vms']]
            assert names == ['WestNO_0', 'WestNO_1']
            compute = imds_get('http://127.0.0.1:18101', '/metadata/instance/compute', '2021-02-01')[1]
            assert compute['name'] == 'WestNO_0'
            process.send_signal(signum)
            assert process.wait(timeout=10) == 0
            assert not pidfile.exists()
        finally:
            if process.poll() is None:
                process.kill()
            process.communicate(timeout=10)


def test_port_zero_everywhere_is_reported_in_the_ready_file(tmp_path, background):
    start, pidfile = background
    ready_file = tmp_path / 'ready.json'
    config_path = tmp_path / 'world.json'
    config_path.write_text(json.dumps({'vms': [{'name': 'any_0', 'listen': '127.0.0.1:0'},
                                               {'name': 'any_1', 'listen': '127.0.0.1:0'}]}))
    result = start('--config', str(config_path), '--control', '127.0.0.1:0', '--ready-file', str(ready_file))
    assert result.returncode == 0, result.stderr
    ready = json.loads(ready_file.read_text())
    assert ready['pid'] == int(result.stdout.strip())
    ports = {address.rpartition(':')[2] for address in ready['vms'].values()} | {ready['control'].rpartition(':')[2]}
    assert len(ports) == 3 and '0' not in ports
    control = SimulatorControl('http://' + ready['control'])
    assert {vm['name']: vm['listen'] for vm in control.state()['vms']} == ready['vms']
    for address in ready['vms'].values():
        status, document = imds_get('http://' + address)
        assert status == 200 and document['Events'] == []
    assert run('--stop', '--pidfile', str(pidfile)).returncode == 0
    assert not ready_file.exists()


def test_simulator_process_helper_isolates_everything_in_its_folder(tmp_path):
    from imds_simulator.process import SimulatorProcess
    config = {'vms': [{'name': 'iso_0', 'listen': '127.0.0.1:0'}]}
    with SimulatorProcess(tmp_path / 'one', config=config) as one, \
            SimulatorProcess(tmp_path / 'two', config=config) as two:
        assert one.endpoint('iso_0') != two.endpoint('iso_0')
        one.control.create_event('Freeze', ['iso_0'])
        assert len(imds_get(one.base_url('iso_0'))[1]['Events']) == 1
        assert imds_get(two.base_url('iso_0'))[1]['Events'] == []
        # A reset asking for port 0 again moves the VM to a new free port.
        two.control.reset({'vms': [{'name': 'iso_0', 'listen': '127.0.0.1:0'}]})
        assert imds_get(two.base_url('iso_0'))[0] == 200
        pid = one.pid
    assert not os.path.exists('/proc/%d' % pid) or b'imds' not in open('/proc/%d/cmdline' % pid, 'rb').read()
    assert sorted(os.listdir(tmp_path)) == ['one', 'two']


def test_background_creates_the_folders_of_its_files(tmp_path, background):
    # What failed on a new machine: the pid file's folder did not exist yet.
    start, dummy = background
    pidfile = tmp_path / 'not' / 'yet' / 'there.pid'
    config_path, dummy = write_config(tmp_path)
    result = run('--background', '--pidfile', str(pidfile), '--config', str(config_path), '--control', '127.0.0.1:0')
    try:
        assert result.returncode == 0, result.stderr
        assert pidfile.exists() and (tmp_path / 'not' / 'yet' / 'there.pid.log').exists()
    finally:
        assert run('--stop', '--pidfile', str(pidfile)).returncode == 0


def ended_process():
    """The pid of a process that has ended and been reaped."""
    child = subprocess.Popen([sys.executable, '-c', 'pass'])
    child.wait(timeout=30)
    return child.pid


# A test process that holds a simulator and waits to be killed: it prints the
# simulator's pid, pid file and control address, then sleeps.
HOLDER = '''
import json, sys, time
sys.path.insert(0, sys.argv[1])
from imds_simulator.process import SimulatorProcess
sim = SimulatorProcess(sys.argv[2], config={'vms': [{'name': 'held_0', 'listen': '127.0.0.1:0'}]}).start()
print(json.dumps({'pid': sim.pid, 'pidfile': sim.pidfile, 'log': sim.log_file, 'control': sim.ready['control']}),
      flush=True)
time.sleep(600)
'''


def test_a_simulator_stops_itself_once_the_test_process_that_started_it_is_killed(tmp_path):
    holder = subprocess.Popen([sys.executable, '-c', HOLDER, os.path.dirname(SCRIPT), str(tmp_path / 'held')],
                              stdout=subprocess.PIPE, text=True)
    simulator = None
    try:
        simulator = json.loads(holder.stdout.readline())
        assert not is_gone(simulator['pid'])
        # SIGKILL: the holder's `with` blocks and finalizers never run.
        holder.kill()
        holder.wait(timeout=30)
        assert ends_within(simulator['pid'], 30), 'the simulator outlived the process it ran for'
        # It stopped the way --stop stops it: pid file removed, ports closed, the reason logged.
        assert not os.path.exists(simulator['pidfile'])
        with open(simulator['log'], encoding='utf-8') as log:
            assert 'process %d (--stop-with) has ended: stopping' % holder.pid in log.read()
        with pytest.raises(OSError):
            socket.create_connection(('127.0.0.1', int(simulator['control'].rsplit(':', 1)[1])), timeout=1).close()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=30)
        holder.stdout.close()
        if simulator is not None and not is_gone(simulator['pid']):
            os.kill(simulator['pid'], signal.SIGKILL)


# A test process that starts two programs, one as the harnesses start what
# they test (ends_with_this_process) and one plainly, prints both pids and
# waits to be killed.
STARTER = '''
import subprocess, sys, time
sys.path.insert(0, sys.argv[1])
from imds_simulator.process import ends_with_this_process
program = [sys.executable, '-c', 'import time; time.sleep(600)']
ending = subprocess.Popen(program, preexec_fn=ends_with_this_process())
plain = subprocess.Popen(program)
print(ending.pid, plain.pid, flush=True)
time.sleep(600)
'''


def test_a_program_started_to_end_with_the_test_process_ends_once_that_process_is_killed():
    starter = subprocess.Popen([sys.executable, '-c', STARTER, os.path.dirname(SCRIPT)], stdout=subprocess.PIPE,
                               text=True)
    started = []
    try:
        started = [int(pid) for pid in starter.stdout.readline().split()]
        assert len(started) == 2 and not any(is_gone(pid) for pid in started)
        ending, plain = started
        starter.kill()
        starter.wait(timeout=30)
        assert ends_within(ending, 30), 'the program outlived the test process that started it'
        # What the harnesses did before: a program started plainly runs on.
        assert not is_gone(plain)
    finally:
        if starter.poll() is None:
            starter.kill()
            starter.wait(timeout=30)
        starter.stdout.close()
        for pid in started:
            if not is_gone(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize('pid_of', [ended_process, lambda: 0, lambda: -5])
def test_stop_with_a_process_that_does_not_run_is_refused_before_anything_starts(tmp_path, pid_of):
    pid = pid_of()
    config_path, dummy = write_config(tmp_path)
    pidfile = tmp_path / 'refused.pid'
    for mode in (['--background', '--pidfile', str(pidfile)], []):
        result = run(*mode, '--config', str(config_path), '--control', '127.0.0.1:0', '--stop-with', str(pid))
        assert result.returncode == 2, result.stderr
        assert '--stop-with' in result.stderr and str(pid) in result.stderr and 'give the pid' in result.stderr
        assert not pidfile.exists()


@pytest.mark.parametrize('pidfd', ['pidfd', 'signal 0 (no pidfd_open)'])
def test_the_owner_is_seen_to_end_whichever_way_it_is_watched(monkeypatch, pidfd):
    from imds_simulator.cli import Owner
    if pidfd != 'pidfd':
        def no_pidfd(pid):
            raise OSError(38, 'Function not implemented')
        monkeypatch.setattr(os, 'pidfd_open', no_pidfd, raising=False)
    child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])
    owner = Owner(child.pid)
    try:
        assert not owner.ended()
        child.kill()
        child.wait(timeout=30)
        assert owner.ended()
    finally:
        owner.close()
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)
    itself = Owner(os.getpid())
    assert not itself.ended()
    itself.close()
