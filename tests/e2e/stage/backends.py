# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One tiny HTTP backend per simulated VM, and what maintenance does to it.

The simulator's impact command tells the fleet (through a small admin HTTP
server) when an event hits a VM and when it ends:

- Freeze: the VM is paused. The backend keeps its socket but answers
  nothing until the freeze ends, like a paused machine. A load balancer
  cannot safely resend such a request, so requests sent to a frozen,
  undrained VM fail with a gateway time-out.
- Reboot, Redeploy and the others: the VM goes away. Requests in flight are
  cut (connection reset) and new connections are refused until the impact
  ends. A load balancer with retries resends those to another server.

Impacts can overlap on one VM (a User reboot during a Freeze): the backend
keeps every impact running on it and is down while any restart runs, frozen
while only freezes run, and up once the last one has ended.

Each backend counts the requests of the service (health checks aside) that a
freeze held: with draining there must be none.
"""

import http.server
import json
import socket
import socketserver
import struct
import threading
import time
import urllib.parse

FREEZE_LIMIT_SECONDS = 120  # a paused request never hangs the test longer


class _QuietHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, format, *args):  # noqa: A002 - BaseHTTPRequestHandler's signature
        pass

    def _answer(self, status, body, headers=None):
        data = body.encode('utf-8')
        self.send_response(status)
        self.send_header('Content-Type', 'text/plain; charset=utf-8')
        self.send_header('Content-Length', str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


class _BackendHandler(_QuietHandler):
    def do_GET(self):  # noqa: N802 - http.server's naming
        backend = self.server.backend
        # HAProxy checks the health of drained servers too: only the
        # service's requests count as held, and each once.
        of_the_service = self.path != '/health'
        held = backend.wait_while_frozen(count=of_the_service)
        if of_the_service:
            time.sleep(backend.work_seconds)
            backend.wait_while_frozen(count=not held)
        backend.count_request()
        self._answer(200, '%s ok\n' % backend.name, {'X-Backend': backend.name})


class _Listener(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, address, backend):
        self.backend = backend
        self.open_connections = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, _BackendHandler)

    def handle_error(self, request, client_address):
        # HAProxy's health checks and cut connections reset sockets all the
        # time; that is the weather here, not an error worth a traceback.
        pass

    def process_request(self, request, client_address):
        with self.connections_lock:
            self.open_connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self.connections_lock:
            self.open_connections.discard(request)
        super().shutdown_request(request)

    def abort_connections(self):
        """Reset every open connection, as a machine that vanished would."""
        with self.connections_lock:
            connections, self.open_connections = list(self.open_connections), set()
        for connection in connections:
            try:
                connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Backend:
    """The service of one VM, at ``host:port``."""

    def __init__(self, name, host, port, work_seconds=0.02):
        self.name = name
        self.host = host
        self.port = port
        self.work_seconds = work_seconds
        self.state = 'stopped'
        self.requests = 0
        # Requests of the service (not health checks) a freeze held: what
        # draining exists to prevent, and what no retry can save.
        self.held_requests = 0
        self.waiting_while_frozen = 0  # requests, health checks included, a freeze is holding now
        self._lock = threading.Lock()
        self._running = threading.Event()
        self._running.set()
        self._listener = None
        self._thread = None
        # event id -> event type, for every impact running on this VM now;
        # its own lock, as closing the listener waits for request threads.
        self._impacts = {}
        self._impacts_lock = threading.Lock()

    @property
    def url(self):
        return 'http://%s:%d' % (self.host, self.port)

    def count_request(self):
        with self._lock:
            self.requests += 1

    def wait_while_frozen(self, count=False):
        """Wait while the VM is frozen, counting the request as held if ``count``; whether it was frozen."""
        if self._running.is_set():
            return False
        with self._lock:
            if count:
                self.held_requests += 1
            self.waiting_while_frozen += 1
        try:
            self._running.wait(FREEZE_LIMIT_SECONDS)
        finally:
            with self._lock:
                self.waiting_while_frozen -= 1
        return True

    def start(self):
        self._listener = _Listener((self.host, self.port), self)
        self.port = self._listener.server_address[1]
        self._thread = threading.Thread(target=self._listener.serve_forever, kwargs={'poll_interval': 0.05},
                                        name='backend-%s' % self.name, daemon=True)
        self._thread.start()
        self.state = 'up'

    def _close_listener(self):
        if self._listener is not None:
            self._listener.shutdown()
            self._listener.abort_connections()
            self._listener.server_close()
            self._thread.join(5)
            self._listener = None

    def begin_impact(self, event_id, event_type):
        with self._impacts_lock:
            self._impacts[event_id] = event_type
            self._apply()

    def end_impact(self, event_id):
        with self._impacts_lock:
            self._impacts.pop(event_id, None)
            self._apply()

    def _apply(self):
        """Put the backend in the state its running impacts make (called with the impacts lock held)."""
        types = set(self._impacts.values())
        if types - {'Freeze'}:
            self._running.set()
            self._close_listener()
            self.state = 'down'
            return
        if self._listener is None:
            self.start()
        if types:
            self._running.clear()
            self.state = 'frozen'
        else:
            self._running.set()
            self.state = 'up'

    def stop(self):
        self._running.set()
        self._close_listener()
        self.state = 'stopped'


class _AdminHandler(_QuietHandler):
    def do_POST(self):  # noqa: N802 - http.server's naming
        query = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
        fields = dict((key, values[0]) for key, values in query.items())
        length = int(self.headers.get('Content-Length') or 0)
        if length:
            self.rfile.read(length)
        try:
            self.server.fleet.impact(fields.get('phase'), fields.get('vm'), fields.get('type'), fields.get('event'))
        except KeyError as exc:
            self._answer(404, 'no backend for VM %s\n' % exc)
            return
        self._answer(200, 'ok\n')


class _AdminServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class BackendFleet:
    """Backends by VM name, plus the admin server the impact hook calls."""

    def __init__(self, host):
        self.host = host
        self.backends = {}
        self.impacts = []
        self._lock = threading.Lock()
        self._admin = None

    def add(self, vm_name, work_seconds=0.02):
        backend = Backend(vm_name, self.host, 0, work_seconds)
        backend.start()
        self.backends[vm_name] = backend
        return backend

    def start_admin(self):
        self._admin = _AdminServer((self.host, 0), _AdminHandler)
        self._admin.fleet = self
        threading.Thread(target=self._admin.serve_forever, kwargs={'poll_interval': 0.05}, daemon=True).start()
        return 'http://%s:%d' % (self.host, self._admin.server_address[1])

    def impact(self, phase, vm_name, event_type, event_id):
        backend = self.backends.get(vm_name)
        with self._lock:
            self.impacts.append({'time': time.time(), 'phase': phase, 'vm': vm_name, 'event_type': event_type,
                                 'event_id': event_id, 'has_backend': backend is not None})
        if backend is None:
            return  # a VM outside the inventory: not ours to serve
        if phase == 'start':
            backend.begin_impact(event_id, event_type)
        elif phase == 'end':
            backend.end_impact(event_id)

    def held_by_freeze(self):
        """VM name -> how many requests of the service a freeze held there, for the VMs where any was."""
        return dict((name, backend.held_requests) for name, backend in self.backends.items() if backend.held_requests)

    def impact_log(self):
        with self._lock:
            return [dict(entry) for entry in self.impacts]

    def stop(self):
        for backend in self.backends.values():
            backend.stop()
        if self._admin is not None:
            self._admin.shutdown()
            self._admin.server_close()
            self._admin = None

    def describe(self):
        return json.dumps(dict((name, backend.state) for name, backend in self.backends.items()))
