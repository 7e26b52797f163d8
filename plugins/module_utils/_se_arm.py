# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Calling Azure Resource Manager (Resource Graph, acknowledge) for the fleet plane. Internal use only.

Runs where the fleet modules run, usually the controller (``delegate_to:
localhost``). Standard library only, except the optional ``azure-identity``
package for tokens; a bearer token given as an option needs nothing else.

Decisions (how long to wait after 429 or an exhausted quota, whether a
status is worth a retry) are pure functions, table-tested; ``ArmClient``
does the I/O around them within one overall deadline.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import time

from ._se_arm_options import CLOUDS, DEFAULT_TIMEOUT
from ._se_errors import InvalidParameterError, ScheduledEventsError

try:
    from http.client import HTTPException
    from urllib.error import HTTPError
    from urllib.request import HTTPRedirectHandler, Request, build_opener
except ImportError:  # pragma: no cover - Python 2 has no place on the controller
    HTTPException = HTTPError = HTTPRedirectHandler = Request = build_opener = None

# Cloud name (as azure.azcollection's cloud_environment) -> (ARM endpoint, Entra ID authority host).
CONTRIBUTOR_ROLE = 'ScheduledEventContributor'

# Per request, within the overall deadline.
_REQUEST_TIMEOUT = 30.0
_MAX_ATTEMPTS = 6
_BACKOFF_BASE = 1.0
_BACKOFF_MAX = 16.0


class ArmError(ScheduledEventsError):
    """ARM answered with an error (``status``, ``code``), or could not be reached (``status`` None)."""

    def __init__(self, message, url=None, status=None, code=None):
        super(ArmError, self).__init__(message, url=url)
        self.status = status
        self.code = code


def parse_duration(text):
    """Seconds of ``hh:mm:ss`` (``x-ms-user-quota-resets-after``) or of a plain number; None if unreadable."""
    if text is None:
        return None
    text = str(text).strip()
    try:
        if ':' in text:
            parts = [float(part) for part in text.split(':')]
            if len(parts) != 3 or any(part < 0 for part in parts):
                return None
            return parts[0] * 3600 + parts[1] * 60 + parts[2]
        value = float(text)
    except ValueError:
        return None
    return value if value >= 0 else None


def quota_pause(headers):
    """Seconds to wait before the next Resource Graph request, judged on the last answer's headers.

    Resource Graph counts requests per user and says how many are left in
    the window (``x-ms-user-quota-remaining``) and when it resets
    (``x-ms-user-quota-resets-after``); at zero, the next request would be
    throttled, so the polite client waits for the reset instead.
    """
    remaining = headers.get('x-ms-user-quota-remaining')
    try:
        if remaining is None or int(remaining) > 0:
            return 0.0
    except ValueError:
        return 0.0
    pause = parse_duration(headers.get('x-ms-user-quota-resets-after'))
    return 1.0 if pause is None else pause


def retry_delay(status, headers, attempt):
    """Seconds to wait before retrying after ``status`` (None: no answer), or None when a retry cannot help.

    429 waits what ``Retry-After`` (or the quota reset) says; 5xx, 408 and
    network failures back off exponentially. Everything else (400, 401, 403,
    404, 409) is a problem of the request, the token or the role.
    """
    if attempt >= _MAX_ATTEMPTS:
        return None
    backoff = min(_BACKOFF_BASE * 2 ** (attempt - 1), _BACKOFF_MAX)
    if status == 429:
        for header in ('retry-after', 'x-ms-user-quota-resets-after'):
            delay = parse_duration(headers.get(header))
            if delay is not None:
                return delay
        return backoff
    if status is None or status == 408 or status >= 500:
        return backoff
    return None


def _arm_message(payload, body):
    if isinstance(payload, dict) and isinstance(payload.get('error'), dict):
        error = payload['error']
        return error.get('code'), error.get('message') or ''
    return None, (body or b'')[:300].decode('utf-8', 'replace')


def explain(status, code, message, url):
    """The error message a user gets for an ARM error answer."""
    hint = ''
    if status == 401:
        hint = ' Check the credentials (auth_source, client_id/secret/tenant or bearer_token): the token was refused.'
    elif status == 403:
        hint = (' Assign the %s role (or a role with Microsoft.Maintenance/scheduledevents permissions) to the '
                'identity, on the subscriptions or resource groups read.' % CONTRIBUTOR_ROLE)
    elif status == 429:
        hint = ' Resource Graph kept throttling until the deadline (timeout); query less often or fewer scopes.'
    return 'ARM answered HTTP %s%s at %s: %s.%s' % (status, ' (%s)' % code if code else '', url,
                                                    str(message).rstrip('. '), hint)


class _RefuseRedirects(HTTPRedirectHandler if HTTPRedirectHandler else object):
    """A redirect is answered as it came: ARM sends none, and following one would turn the POST into a GET and
    carry the bearer token to wherever it points."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # pylint: disable=too-many-arguments
        return None


def _default_send(url, body, headers, timeout):
    """POST ``body`` (bytes); ``(status, headers with lower-case names, body bytes)``; OSError when no answer."""
    request = Request(url, data=body, headers=headers)
    try:
        # The default handlers but redirects: proxy settings from the
        # environment apply, as ARM is reached like any public HTTPS service.
        response = build_opener(_RefuseRedirects()).open(request, timeout=timeout)
    except HTTPError as exc:
        return exc.code, dict((key.lower(), value) for key, value in (exc.headers or {}).items()), exc.read()
    try:
        return (response.getcode(), dict((key.lower(), value) for key, value in response.headers.items()),
                response.read())
    finally:
        response.close()


class ArmClient(object):
    """POSTs JSON to ARM with a bearer token, retrying 429/5xx within ``timeout`` seconds overall."""

    def __init__(self, endpoint, get_token, timeout=DEFAULT_TIMEOUT, send=None, sleep=time.sleep,
                 monotonic=time.monotonic):
        if not isinstance(endpoint, str) or not endpoint.startswith(('https://', 'http://')):
            raise InvalidParameterError('management_endpoint must be an http(s) URL such as '
                                        'https://management.azure.com, got %r' % (endpoint,))
        if timeout is None or timeout <= 0:
            raise InvalidParameterError('timeout must be more than 0 seconds, got %r' % (timeout,))
        self.endpoint = endpoint.rstrip('/')
        self._get_token = get_token
        self._token = None
        self.timeout = float(timeout)
        self._send = send or _default_send
        self._sleep = sleep
        self.monotonic = monotonic
        self.deadline = monotonic() + self.timeout
        self.throttled_waits = 0
        self.requests = 0

    def renew(self):
        """Start a new ``timeout`` budget, for the next operation of a long wait."""
        self.deadline = self.monotonic() + self.timeout

    def token(self):
        if self._token is None:
            self._token = self._get_token()
        return self._token

    def remaining(self):
        return self.deadline - self.monotonic()

    def wait(self, seconds, why):
        """Sleep ``seconds`` if the deadline allows it; ArmError naming ``why`` otherwise."""
        if seconds <= 0:
            return
        if seconds > self.remaining():
            raise ArmError('%s asks to wait %.1f s, past the deadline (timeout %.0f s); raise timeout or read '
                           'fewer scopes' % (why, seconds, self.timeout))
        self.throttled_waits += 1
        self._sleep(seconds)

    def pause(self, seconds):
        """Sleep between two polls of a wait (not a throttling wait)."""
        self._sleep(seconds)

    def post(self, path, api_version, payload):
        """``(answer JSON, headers)`` of a POST to ``path``; ArmError on failure."""
        url = '%s%s?api-version=%s' % (self.endpoint, path, api_version)
        body = json.dumps(payload).encode('utf-8') if payload is not None else b''
        attempt = 0
        token_refreshed = False
        while True:
            attempt += 1
            headers = {'Authorization': 'Bearer ' + self.token(), 'Content-Type': 'application/json',
                       'Accept': 'application/json'}
            timeout = max(0.1, min(_REQUEST_TIMEOUT, self.remaining()))
            self.requests += 1
            try:
                status, answer_headers, answer = self._send(url, body, headers, timeout)
            except (OSError, ValueError, HTTPException) as exc:
                # HTTPException: the connection dropped in the middle of an answer (IncompleteRead).
                status, answer_headers, answer = None, {}, str(exc).encode('utf-8')
            if status == 401 and not token_refreshed:
                # The token may have expired since it was got (a long wait
                # outlives the last minutes of a CLI token): a new one, once.
                token_refreshed = True
                self._token = None
                continue
            if status is not None and 200 <= status < 300:
                try:
                    return (json.loads(answer.decode('utf-8')) if answer else {}), answer_headers
                except ValueError:
                    raise ArmError('ARM answered %s with a body that is not JSON: %r' % (url, answer[:200]), url=url,
                                   status=status)
            delay = retry_delay(status, answer_headers, attempt)
            if status is None:
                message = 'ARM could not be reached at %s: %s' % (url, answer.decode('utf-8', 'replace'))
                code = None
            else:
                try:
                    parsed = json.loads(answer.decode('utf-8')) if answer else None
                except ValueError:
                    parsed = None
                code, text = _arm_message(parsed, answer)
                message = explain(status, code, text, url)
            if delay is None or delay > self.remaining():
                raise ArmError(message, url=url, status=status, code=code)
            self.wait(delay, 'ARM (HTTP %s)' % status)


# -- tokens ---------------------------------------------------------------
def arm_endpoint(options):
    """The ARM base URL and the token scope for ``options``."""
    cloud = options.get('cloud_environment') or 'AzureCloud'
    if cloud not in CLOUDS:
        raise InvalidParameterError('cloud_environment must be one of %s, got %r' % (', '.join(sorted(CLOUDS)), cloud))
    endpoint = options.get('management_endpoint') or CLOUDS[cloud][0]
    return endpoint.rstrip('/'), endpoint.rstrip('/') + '/.default'


def _credential(options, identity):
    """An azure-identity credential for ``options``; ``identity`` is the imported azure.identity module."""
    source = options.get('auth_source') or 'auto'
    authority = CLOUDS[options.get('cloud_environment') or 'AzureCloud'][1]
    client_id, secret, tenant = options.get('client_id'), options.get('secret'), options.get('tenant')
    if secret:
        if not (client_id and tenant):
            raise InvalidParameterError('secret needs client_id and tenant (a service principal)')
        return identity.ClientSecretCredential(tenant, client_id, secret, authority=authority)
    if source == 'cli':
        return identity.AzureCliCredential(tenant_id=tenant) if tenant else identity.AzureCliCredential()
    if source == 'env':
        return identity.EnvironmentCredential(authority=authority)
    if source == 'msi':
        return identity.ManagedIdentityCredential(client_id=client_id) if client_id else \
            identity.ManagedIdentityCredential()
    kwargs = {'authority': authority}
    if client_id:
        kwargs['managed_identity_client_id'] = client_id
    return identity.DefaultAzureCredential(**kwargs)


def token_source(options, import_identity=None):
    """A function returning a bearer token for ARM, as ``options`` say.

    ``bearer_token`` is used as it is; otherwise azure-identity (imported
    lazily, so that it is needed only then) gets one for the ARM scope.
    """
    if options.get('bearer_token'):
        token = options['bearer_token']
        return lambda: token
    try:
        identity = (import_identity or _import_identity)()
    except ImportError:
        raise InvalidParameterError(
            'Getting an Azure token needs the Python package azure-identity where this task runs (usually the '
            'controller: delegate_to localhost). Install it with "pip install azure-identity" (or build the '
            'execution environment from meta/execution-environment.yml), or pass bearer_token.')
    credential = _credential(options, identity)
    dummy, scope = arm_endpoint(options)

    def get_token():
        try:
            return credential.get_token(scope).token
        except Exception as exc:  # pylint: disable=broad-except
            # azure-identity raises its own exception types for every way
            # of failing; the user needs the text, not the class.
            raise ArmError('Could not get an Azure token for %s with auth_source=%s: %s'
                           % (scope, options.get('auth_source') or 'auto', exc))
    return get_token


def _import_identity():
    import azure.identity  # pylint: disable=import-outside-toplevel
    return azure.identity


def client_from_options(options, **kwargs):
    """An ArmClient configured from a mapping holding the ARM options."""
    endpoint, dummy = arm_endpoint(options)
    timeout = options.get('timeout')
    return ArmClient(endpoint, token_source(options), timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
                     **kwargs)
