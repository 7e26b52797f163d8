# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A real HAProxy (the Debian package) on loopback, and a watcher of its state.

The configuration is what a careful operator would run: health checks, and
retries that resend a request to another server when a server refused the
connection or closed it without answering. What retries cannot save is a
request a server accepted and never answered (a frozen VM): only draining
before maintenance avoids those.

A health check has as long to be answered as a request (``timeout check``
and ``timeout server``, 1 s): the checker must not take a server out of the
pool while it still answers requests in time (tests/e2e/test_stage_haproxy.py
says what a shorter one did on a busy machine). A frozen or restarting
server is still found out: a restart refuses the connection at once, and a
freeze never answers.
"""

import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time

from imds_simulator.process import ends_with_this_process, unused_port  # on the path: see __init__.py

ADMIN_DRAIN = 0x08  # srv_admin_state bits of "show servers state": forced drain
ADMIN_MAINT = 0x01  # forced maintenance

CONFIG = """\
global
    stats socket {socket} mode 600 level admin
    stats timeout 30s
    log stdout format raw local0

defaults
    mode http
    log global
    option httplog
    option redispatch 1
    retries 3
    retry-on conn-failure empty-response
    timeout connect 500ms
    timeout client 30s
    timeout server 1s
    timeout check 1s
    timeout http-keep-alive 30s

frontend service
    bind {bind}
{routes}
{backends}"""


def haproxy_binary():
    return shutil.which('haproxy') or ('/usr/sbin/haproxy' if os.path.exists('/usr/sbin/haproxy') else None)


# A Unix socket path holds at most ~100 bytes (HAProxy says 97); test folders
# under a long $TMPDIR are longer than that.
_SOCKET_PATH_LIMIT = 90


def short_private_dir(preferred_parent):
    """A new private folder for Unix sockets: under ``preferred_parent`` if paths there are short enough, else /tmp."""
    parent = preferred_parent if len(preferred_parent) + 20 < _SOCKET_PATH_LIMIT else '/tmp'
    return tempfile.mkdtemp(prefix='se-hap-', dir=parent)


def runtime_command(socket_path, command, timeout=5.0):
    """HAProxy's answer to one runtime API command."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        conn.connect(socket_path)
        conn.sendall(command.encode() + b'\n')
        chunks = []
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b''.join(chunks).decode(errors='replace')


class HAProxy:
    """One HAProxy process; ``pools`` maps backend name -> [(server, host, port)]."""

    def __init__(self, workdir, host, pools, routes):
        self.workdir = workdir
        self.host = host
        self.port = unused_port(host)
        self._socket_dir = short_private_dir(workdir)
        self.socket = os.path.join(self._socket_dir, 'admin.sock')
        self.log_path = os.path.join(workdir, 'haproxy.log')
        self.pools = pools
        self.routes = routes  # [(path prefix, backend)], the first pool is the default
        self.process = None
        self._log = None

    @property
    def url(self):
        return 'http://%s:%d' % (self.host, self.port)

    def config_text(self):
        routes = ''.join('    use_backend %s if { path_beg %s }\n' % (backend, prefix) for prefix, backend in self.routes)
        routes += '    default_backend %s\n' % next(iter(self.pools))
        backends = ''
        for name, servers in self.pools.items():
            backends += '\nbackend %s\n    balance roundrobin\n    option httpchk GET /health\n' % name
            backends += '    default-server inter 250ms fall 2 rise 2\n'
            for server, host, port in servers:
                backends += '    server %s %s:%d check\n' % (server, host, port)
        return CONFIG.format(socket=self.socket, bind='%s:%d' % (self.host, self.port), routes=routes,
                             backends=backends)

    def start(self, timeout=10.0, attempts=5):
        """Start HAProxy; if its port was taken between choosing and binding, choose another (up to ``attempts``)."""
        for attempt in range(attempts):
            try:
                return self._start_once(timeout)
            except RuntimeError:
                if attempt == attempts - 1 or not self._lost_its_port():
                    raise
                self.port = unused_port(self.host)
        return None

    def _lost_its_port(self):
        try:
            with open(self.log_path, encoding='utf-8', errors='replace') as handle:
                text = handle.read()
        except OSError:
            return False
        return 'cannot bind socket' in text or 'Address already in use' in text

    def _start_once(self, timeout):
        binary = haproxy_binary()
        if binary is None:
            raise RuntimeError('haproxy is not installed: apt-get install haproxy (tests/tooling/debian-packages.txt)')
        config_path = os.path.join(self.workdir, 'haproxy.cfg')
        with open(config_path, 'w') as handle:
            handle.write(self.config_text())
        check = subprocess.run([binary, '-c', '-f', config_path], capture_output=True, text=True, check=False)
        if check.returncode != 0:
            raise RuntimeError('haproxy rejected %s: %s' % (config_path, check.stderr or check.stdout))
        if self._log is not None:
            self._log.close()
        self._log = open(self.log_path, 'w')
        self.process = subprocess.Popen([binary, '-db', '-f', config_path], stdout=self._log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, preexec_fn=ends_with_this_process())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError('haproxy exited with %s; see %s' % (self.process.returncode, self.log_path))
            try:
                if 'pxname' in runtime_command(self.socket, 'show stat'):
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError('haproxy did not open its runtime API at %s within %s s' % (self.socket, timeout))

    def servers(self):
        """``{(backend, server): {'admin': bits, 'operational': n, 'sessions': n, 'status': text}}``."""
        state = {}
        for line in runtime_command(self.socket, 'show servers state').splitlines():
            fields = line.split()
            if len(fields) > 6 and fields[0].isdigit():
                state[(fields[1], fields[3])] = {'operational': int(fields[5]), 'admin': int(fields[6])}
        lines = runtime_command(self.socket, 'show stat -1 4 -1').splitlines()
        header = lines[0].lstrip('# ').split(',') if lines else []
        for line in lines[1:]:
            row = dict(zip(header, line.split(',')))
            key = (row.get('pxname'), row.get('svname'))
            if key in state:
                state[key].update(sessions=int(row.get('scur') or 0) + int(row.get('qcur') or 0),
                                  status=row.get('status'))
        return state

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        if self._log is not None:
            self._log.close()
            self._log = None
        shutil.rmtree(self._socket_dir, ignore_errors=True)


class StateWatcher:
    """Samples HAProxy's server states every ``interval`` s and keeps every change."""

    def __init__(self, haproxy, interval=0.05):
        self.haproxy = haproxy
        self.interval = interval
        self.changes = []  # {'time', 'backend', 'server', 'admin', 'operational', 'sessions', 'status'}
        self.samples = 0
        self.errors = []
        self._last = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name='haproxy-watcher', daemon=True)

    def start(self):
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            moment = time.time()
            try:
                servers = self.haproxy.servers()
            except OSError as exc:
                self.errors.append('%s: %s' % (moment, exc))
                servers = {}
            self.samples += 1
            for (backend, server), state in servers.items():
                if self._last.get((backend, server)) != state:
                    self._last[(backend, server)] = state
                    self.changes.append(dict(state, time=moment, backend=backend, server=server))
            self._stop.wait(self.interval)

    def stop(self):
        self._stop.set()
        self._thread.join(5)

    def state_at(self, server, moment):
        """The last sampled state of ``server`` at or before ``moment``, or None."""
        found = None
        for change in self.changes:
            if change['server'] == server and change['time'] <= moment:
                found = change
        return found

    @staticmethod
    def drained(state):
        return state is not None and bool(state['admin'] & (ADMIN_DRAIN | ADMIN_MAINT))
