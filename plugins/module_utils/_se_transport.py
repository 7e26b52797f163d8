# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The HTTP transport to IMDS, stdlib only. Internal use only.

Built on http.client rather than urllib on purpose: http.client never
consults HTTP(S)_PROXY (IMDS must be reached directly), never follows
redirects, adds no X-Forwarded-For, lets the connect timeout differ from the
read timeout (the first Scheduled Events call may take two minutes to answer,
but a machine that is not on Azure should fail fast), and keeps one
connection alive between polls.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import http.client as http_client
import io
import socket
import time
from urllib.parse import urlsplit

from ._se_errors import ImdsTimeoutError, ImdsUnreachableError, InvalidParameterError


class HttpResponse(object):
    """What a transport returns: ``status`` (int), ``headers`` (dict, lower-case names), ``body`` (bytes)."""

    __slots__ = ('status', 'headers', 'body')

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body


def split_origin(url):
    """Return ``(scheme, host, port, path_and_query)`` of an http(s) URL.

    Raises InvalidParameterError for anything else.
    """
    parts = urlsplit(url)
    if parts.scheme not in ('http', 'https') or not parts.hostname:
        raise InvalidParameterError('%r is not an http:// URL; IMDS is http://169.254.169.254/metadata/scheduledevents' % (url,))
    try:
        port = parts.port or (443 if parts.scheme == 'https' else 80)
    except ValueError:
        raise InvalidParameterError('%r has an invalid port' % (url,))
    path = parts.path or '/'
    if parts.query:
        path += '?' + parts.query
    return parts.scheme, parts.hostname, port, path


class _DeadlineReader(io.RawIOBase):
    """What ``socket.makefile('rb')`` reads (``raw``), each read given only what is left until ``ends``.

    A socket time-out bounds one read, not the answer: a server that sends a
    byte now and then (a proxy or relay in the way, a hung IMDS) would keep a
    request alive without end.
    """

    def __init__(self, raw, sock, ends):
        io.RawIOBase.__init__(self)
        self._raw = raw
        self._sock = sock
        self._ends = ends

    def readable(self):
        return True

    def readinto(self, buffer):
        remaining = self._ends - time.monotonic()
        if remaining <= 0:
            raise socket.timeout('timed out')
        self._sock.settimeout(remaining)
        return self._raw.readinto(buffer)

    def close(self):
        # The socket file keeps the socket open while the answer is read
        # (http.client closes its connection early on "Connection: close").
        self._raw.close()
        io.RawIOBase.close(self)


def _response_class(ends):
    """An ``HTTPConnection.response_class`` whose status, headers and body must all arrive before ``ends``."""
    def make_response(sock, *args, **kwargs):
        response = http_client.HTTPResponse(sock, *args, **kwargs)
        response.fp = io.BufferedReader(_DeadlineReader(response.fp.detach(), sock, ends))
        return response
    return make_response


class HttpClientTransport(object):
    """Sends requests over one reusable connection per origin."""

    def __init__(self):
        self._connection = None
        self._origin = None

    def close(self):
        """Close the kept-alive connection, if any."""
        if self._connection is not None:
            self._connection.close()
        self._connection = None
        self._origin = None

    def _connect(self, url, scheme, host, port, connect_timeout):
        connection_class = http_client.HTTPSConnection if scheme == 'https' else http_client.HTTPConnection
        connection = connection_class(host, port, timeout=connect_timeout)
        try:
            connection.connect()
        except socket.timeout:
            raise ImdsUnreachableError('could not connect to %s within %s s' % (url, connect_timeout), url=url)
        except (socket.error, http_client.HTTPException) as exc:
            raise ImdsUnreachableError('could not connect to %s (%s)' % (url, exc), url=url)
        return connection

    def request(self, method, url, headers, body=None, connect_timeout=5.0, read_timeout=10.0):
        """Send one request and read the whole answer.

        Raises ImdsTimeoutError or ImdsUnreachableError when no HTTP answer
        arrives; HTTP error statuses are returned, not raised.
        """
        scheme, host, port, path = split_origin(url)
        origin = (scheme, host, port)
        reused = self._connection is not None and self._origin == origin
        if not reused:
            self.close()
        try:
            return self._send(method, url, origin, path, headers, body, connect_timeout, read_timeout)
        except (http_client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
            # A kept-alive connection may have been closed by the server
            # between polls; that is no failure of IMDS, so try once afresh.
            self.close()
            if not reused:
                raise ImdsUnreachableError('connection to %s closed without an answer (%s)' % (url, exc), url=url)
            return self._send_fresh(method, url, origin, path, headers, body, connect_timeout, read_timeout)

    def _send_fresh(self, method, url, origin, path, headers, body, connect_timeout, read_timeout):
        try:
            return self._send(method, url, origin, path, headers, body, connect_timeout, read_timeout)
        except (http_client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
            self.close()
            raise ImdsUnreachableError('connection to %s closed without an answer (%s)' % (url, exc), url=url)

    def _send(self, method, url, origin, path, headers, body, connect_timeout, read_timeout):
        try:
            if self._connection is None:
                self._connection = self._connect(url, origin[0], origin[1], origin[2], connect_timeout)
                self._origin = origin
            connection = self._connection
            connection.sock.settimeout(read_timeout)
            connection.response_class = _response_class(time.monotonic() + read_timeout)
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            data = response.read()
            response_headers = dict((name.lower(), value) for name, value in response.getheaders())
            if response.will_close:
                self.close()
            return HttpResponse(response.status, response_headers, data)
        except socket.timeout:
            self.close()
            raise ImdsTimeoutError('no answer from %s within %s s' % (url, read_timeout), url=url)
        except (http_client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            raise
        except (socket.error, http_client.HTTPException) as exc:
            self.close()
            raise ImdsUnreachableError('%s: %s' % (type(exc).__name__, exc), url=url)
