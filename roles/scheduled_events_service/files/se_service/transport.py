# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A requests-based transport for the core's ImdsClient.

One Session keeps one connection to IMDS alive between polls. It never reads
proxy variables (IMDS must be reached directly) and never follows redirects
(IMDS does not redirect; a redirect means something answered in its place).
"""

from .core._se_errors import ImdsTimeoutError, ImdsUnreachableError
from .core._se_transport import HttpClientTransport, HttpResponse


class RequestsTransport(object):
    """Implements the core's transport interface: ``request(...)`` and ``close()``."""

    def __init__(self, requests_module):
        self._requests = requests_module
        self._session = None

    def _get_session(self):
        if self._session is None:
            session = self._requests.Session()
            session.trust_env = False
            adapter = self._requests.adapters.HTTPAdapter(pool_connections=1, pool_maxsize=1, max_retries=0)
            session.mount('http://', adapter)
            session.mount('https://', adapter)
            self._session = session
        return self._session

    def close(self):
        """Drop the session and its kept-alive connection."""
        if self._session is not None:
            self._session.close()
            self._session = None

    def request(self, method, url, headers, body=None, connect_timeout=5.0, read_timeout=10.0):
        """Send one request; raise the core's ImdsTimeoutError/ImdsUnreachableError when no answer came."""
        exceptions = self._requests.exceptions
        try:
            response = self._get_session().request(method, url, headers=headers, data=body,
                                                   timeout=(connect_timeout, read_timeout), allow_redirects=False)
        except exceptions.ConnectTimeout:
            self.close()
            raise ImdsUnreachableError('could not connect to %s within %s s' % (url, connect_timeout), url=url)
        except exceptions.Timeout:
            self.close()
            raise ImdsTimeoutError('no answer from %s within %s s' % (url, read_timeout), url=url)
        except exceptions.RequestException as exc:
            self.close()
            raise ImdsUnreachableError('%s: %s' % (type(exc).__name__, exc), url=url)
        return HttpResponse(response.status_code, dict((name.lower(), value) for name, value in response.headers.items()),
                            response.content)


def build_transport(logger, prefer='requests'):
    """The requests transport when requests is importable, else the core's stdlib one (logged)."""
    if prefer == 'requests':
        try:
            import requests
            import requests.adapters
        except ImportError as exc:
            logger.warning('python requests is not installed (%s); using the standard-library HTTP transport, '
                           'which also keeps its connection alive. Install python3-requests to silence this.', exc)
        else:
            return RequestsTransport(requests), 'requests'
    return HttpClientTransport(), 'http.client'
