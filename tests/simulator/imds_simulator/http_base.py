"""HTTP plumbing shared by the IMDS listeners and the control listener.

HTTP/1.1 with keep-alive: every answer carries Content-Length, request
bodies are always read in full (Content-Length or chunked) so the next
request on the connection starts at the right byte, and closing a server
also closes the idle keep-alive connections it accepted.
"""

import json
import selectors
import socket
import struct
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ['LoopbackHTTPServer', 'JsonRequestHandler', 'BodyError', 'open_server']

MAX_BODY_BYTES = 1024 * 1024
# How long close_all() waits for the serving loop to notice.
_STOP_SECONDS = 5.0
JSON_CONTENT_TYPE = 'application/json; charset=utf-8'


class BodyError(ValueError):
    """The request body could not be read; the connection cannot be reused."""


class LoopbackHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server that can be closed with its open connections."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, handler_class, owner):
        self.owner = owner
        self.open_connections = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, handler_class)
        # The address as bound: for port 0, the port the kernel chose.
        self.bound_address = (address[0], self.server_address[1])
        # close_all() wakes the serving loop through this pair: socketserver's
        # serve_forever wakes every poll interval to look for a shutdown
        # request instead, and a world of a dozen listeners so woken kept
        # about 1% of a core busy while nothing happened.
        self._wake_reader, self._wake_writer = socket.socketpair()
        self.thread = None

    def handle_error(self, request, client_address):
        # A client that gave up before its answer (its time-out ran out while
        # a delay fault or a slow world held the request) is what clients do,
        # not a fault of the simulator's: socketserver would print a traceback
        # into the simulator's log for it. Other errors keep theirs.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    def track(self, connection):
        with self.connections_lock:
            self.open_connections.add(connection)

    def untrack(self, connection):
        with self.connections_lock:
            self.open_connections.discard(connection)

    def serve_until_closed(self):
        """Accept connections (each handled on a thread of its own) until close_all()."""
        with selectors.DefaultSelector() as selector:
            selector.register(self, selectors.EVENT_READ)
            selector.register(self._wake_reader, selectors.EVENT_READ)
            while True:
                for key, _events in selector.select():
                    if key.fileobj is self._wake_reader:
                        return
                    self._handle_request_noblock()

    def close_all(self):
        """Stop serving and drop every connection (keep-alive ones too); once closed, a no-op."""
        if self._wake_writer.fileno() == -1:
            return
        self._wake_writer.send(b'x')
        if self.thread is not None:
            self.thread.join(timeout=_STOP_SECONDS)
        self.server_close()
        self._wake_reader.close()
        self._wake_writer.close()
        with self.connections_lock:
            connections = list(self.open_connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _IPv6Server(LoopbackHTTPServer):
    address_family = socket.AF_INET6


def open_server(address, handler_class, owner):
    """Bind ``address`` and serve it on a daemon thread; OSError if it cannot bind."""
    server_class = _IPv6Server if ':' in address[0] else LoopbackHTTPServer
    server = server_class(address, handler_class, owner)
    server.thread = threading.Thread(target=server.serve_until_closed, name='http-%s:%d' % address, daemon=True)
    server.thread.start()
    return server


class JsonRequestHandler(BaseHTTPRequestHandler):
    """Base handler: keep-alive, body reading, JSON answers, abrupt resets."""

    protocol_version = 'HTTP/1.1'
    # Idle keep-alive connections are dropped after this many real seconds.
    timeout = 120

    def version_string(self):
        return 'imds-simulator'

    def setup(self):
        super().setup()
        # Headers and body leave in two writes; without NODELAY, Nagle and
        # delayed ACKs add ~40 ms to every keep-alive request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.track(self.connection)

    def finish(self):
        try:
            super().finish()
        except OSError:
            # The connection was reset on purpose (fault) or by the client.
            pass
        self.server.untrack(self.connection)

    def log_message(self, format, *args):
        # Requests are recorded in the simulator's own logs instead.
        pass

    def read_body(self):
        """The request body as bytes (empty if there is none)."""
        if self.headers.get('Transfer-Encoding', '').lower() == 'chunked':
            return self._read_chunked()
        length_text = self.headers.get('Content-Length')
        if length_text is None:
            return b''
        if not length_text.strip().isdigit():
            raise BodyError('Content-Length %r is not a number' % length_text)
        length = int(length_text)
        if length > MAX_BODY_BYTES:
            raise BodyError('request body of %d bytes is over the %d byte limit' % (length, MAX_BODY_BYTES))
        return self.rfile.read(length)

    def _read_chunked(self):
        body = b''
        while True:
            size_line = self.rfile.readline(1024).split(b';', 1)[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                raise BodyError('malformed chunk size %r' % size_line) from None
            if size == 0:
                while self.rfile.readline(1024) not in (b'\r\n', b'\n', b''):
                    pass
                return body
            if len(body) + size > MAX_BODY_BYTES:
                raise BodyError('request body is over the %d byte limit' % MAX_BODY_BYTES)
            body += self.rfile.read(size)
            self.rfile.readline(1024)

    def send_bytes(self, status, body, content_type=JSON_CONTENT_TYPE, headers=()):
        self.send_response(status)
        if body:
            self.send_header('Content-Type', content_type)
        self.send_header('Content-Length', str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        if self.close_connection:
            self.send_header('Connection', 'close')
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(body)

    def send_json(self, status, payload, headers=()):
        body = b'' if payload is None else json.dumps(payload).encode('utf-8')
        self.send_bytes(status, body, headers=headers)

    def reset_connection(self):
        """Drop the connection with a TCP RST and no answer at all."""
        self.close_connection = True
        # Linger 0 turns close() into a reset; the buffered reader holds a
        # reference to the socket, so it must go first for close() to act.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
        self.rfile.close()
        self.connection.close()
