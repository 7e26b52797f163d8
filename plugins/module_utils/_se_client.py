# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Scheduled Events client: requests, retries and errors. Internal use only.

One client serves the modules, the controller plugins, the service daemon and
the EDA source. The transport is injectable: the default is stdlib-only, the
service daemon may pass one built on a requests session.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import re
import time

from ._se_document import API_VERSIONS, DEFAULT_API_VERSION, decode_body, decode_document, parse_document
from ._se_errors import (
    ImdsHttpError,
    ImdsRedirectError,
    ImdsTimeoutError,
    ImdsUnreachableError,
    InvalidParameterError,
    MalformedDocumentError,
    RequestCancelledError,
    ScheduledEventsError,
)
from ._se_retry import RetryPolicy, retry_after_seconds
from ._se_select import event_id_key
from ._se_transport import HttpClientTransport, split_origin

DEFAULT_ENDPOINT = 'http://169.254.169.254/metadata/scheduledevents'
DEFAULT_TIMEOUT = 10.0
DEFAULT_RETRIES = 5
# The most one operation (a read, an approval, an identity lookup) may take,
# retries and the first call's allowance included: room for the two-minute
# first call and a few quick retries, and a bound a playbook can rely on.
DEFAULT_DEADLINE = 150.0
# A request is never sent with less time than this to answer: a sliver of a
# deadline would only produce a time-out that says nothing about IMDS.
MIN_ATTEMPT_SECONDS = 0.05
# The first request enables Scheduled Events for the VM and may take up to
# two minutes to be answered; a little margin on top.
FIRST_CALL_TIMEOUT = 130.0
# A VM that is not on Azure must fail fast rather than wait two minutes, so
# connecting is bounded separately from waiting for the answer.
CONNECT_TIMEOUT = 5.0
# How many recent (method, url, status or failure) tuples attempt_log keeps.
ATTEMPT_LOG_SIZE = 100
USER_AGENT = 'azure_maintenance.scheduled_events/0.1.0'

_API_VERSION_SHAPE = re.compile(r'^\d{4}-\d{2}-\d{2}(-preview)?$')

_UNREACHABLE_HINT = ('Is this an Azure VM? Scheduled Events are only served to Azure VMs at '
                     'http://169.254.169.254; set endpoint to reach the simulator or another address.')


def validate_api_version(api_version):
    """Return ``api_version`` if it can be sent, else raise InvalidParameterError."""
    if not isinstance(api_version, str) or not _API_VERSION_SHAPE.match(api_version):
        raise InvalidParameterError('api_version %r is not of the form YYYY-MM-DD; use one of %s (the old {latest} '
                                    'form is not supported by IMDS)' % (api_version, ', '.join(API_VERSIONS)))
    return api_version


def validate_endpoint(endpoint):
    """Return ``endpoint`` if usable as the scheduledevents URL, else raise InvalidParameterError."""
    if not isinstance(endpoint, str) or not endpoint:
        raise InvalidParameterError('endpoint must be a URL such as %s' % DEFAULT_ENDPOINT)
    split_origin(endpoint)
    if '?' in endpoint or '#' in endpoint:
        raise InvalidParameterError('endpoint %r must not carry a query or fragment; set api_version instead' % endpoint)
    return endpoint


def origin_of(endpoint):
    """``scheme://host:port`` of an endpoint, where the other IMDS paths live."""
    scheme, host, port, dummy = split_origin(endpoint)
    if ':' in host:
        host = '[%s]' % host
    return '%s://%s:%d' % (scheme, host, port)


def _imds_message(body):
    try:
        data = json.loads(body.decode('utf-8'))
    except (ValueError, UnicodeDecodeError, AttributeError):
        data = None
    if isinstance(data, dict):
        message = data.get('error') or data.get('message') or json.dumps(data, sort_keys=True)
        newest = data.get('newest-versions')
        if newest:
            message = '%s (IMDS supports: %s)' % (message, ', '.join(str(v) for v in newest))
        return str(message)
    text = body.decode('utf-8', 'replace').strip() if isinstance(body, bytes) else str(body or '')
    return text[:300]


def _http_error(method, url, status, body, attempts, headers=None):
    """An ImdsHttpError whose message tells the user what to do about ``status``."""
    imds_message = _imds_message(body)
    lowered = imds_message.lower()
    # Forwarded first: its message may also name the metadata service and a header.
    if status == 400 and 'forwarded' in lowered:
        advice = 'IMDS rejects requests that went through a proxy (X-Forwarded-For); reach it directly'
    elif status == 400 and 'api-version' in lowered:
        advice = 'set api_version to a version IMDS supports'
    elif status == 400 and 'metadata' in lowered and 'header' in lowered:
        advice = ('the Metadata: true header did not reach IMDS. A proxy in between strips or rewrites it: IMDS '
                  'must be reached directly, so exempt 169.254.169.254 from any proxy (NO_PROXY)')
    elif status == 400:
        advice = 'the request was refused as malformed; check the event ids and options'
    elif status == 404:
        path = url.split('?', 1)[0]
        if path.endswith('/metadata/scheduledevents'):
            advice = 'no such IMDS path: check that endpoint is the IMDS address (scheme, host and port)'
        elif '/metadata/instance' in path:
            advice = 'this IMDS does not serve that path; set resource_name if the VM name cannot be discovered'
        else:
            advice = 'no such IMDS path: endpoint must end in /metadata/scheduledevents'
    elif status == 405:
        advice = 'IMDS does not allow %s on this path: check endpoint' % method
    elif status == 410:
        advice = 'IMDS kept answering 410 Gone for longer than the ~70 s it asks clients to retry for; try again later'
    elif status == 429:
        advice = ('IMDS kept throttling after %d attempts: more than about 5 requests per second reach IMDS from this '
                  'VM; poll less often or stop other IMDS clients' % attempts)
    elif status >= 500:
        advice = 'IMDS had an internal error after %d attempts; this is usually transient, try again' % attempts
    else:
        # IMDS documents 400, 404, 405, 410, 429 and 500 only: a 401, 403 or
        # 407 comes from whatever else answered (a firewall's "denied
        # destination", an authenticating proxy, another server at endpoint).
        advice = ('IMDS does not document HTTP %d, so something other than IMDS probably answered: another server '
                  'at endpoint, or a proxy or firewall between this host and IMDS. Check endpoint, and that this '
                  'host reaches IMDS directly (exempt 169.254.169.254 from any proxy)' % status)
    message = 'IMDS answered HTTP %d to %s %s: %s. What to do: %s.' % (status, method, url, imds_message, advice)
    return ImdsHttpError(message, url=url, status=status, imds_message=imds_message, body=body, headers=headers,
                         retry_after=_retry_after(headers))


def _retry_after(headers):
    return retry_after_seconds((headers or {}).get('retry-after'))


def _number_or_none(value, kind):
    # Configuration dicts (daemon, EDA source) arrive untyped: '10' is fine,
    # 'ten' must become a clear error rather than a TypeError deep inside.
    if value is None or isinstance(value, bool):
        return None
    try:
        as_float = float(value)
    except (TypeError, ValueError):
        return None
    if math.isnan(as_float) or math.isinf(as_float):
        return None
    if kind is int:
        return int(as_float) if as_float.is_integer() else None
    return as_float


def _seconds(value):
    return ('%.1f' % value).rstrip('0').rstrip('.')


def _attempts_text(attempts):
    return 'to the only attempt' if attempts == 1 else 'to any of %d attempts' % attempts


def _patience_text(patience_spent, first_call_timeout):
    first = [timeout for timeout, first_call in patience_spent if first_call]
    others = [timeout for timeout, first_call in patience_spent if not first_call]
    parts = []
    if first and first[0] < first_call_timeout:
        parts.append('the first request of this VM waited %s s, all the deadline allowed of the %s s enabling '
                     'Scheduled Events may take' % (_seconds(first[0]), _seconds(first_call_timeout)))
    elif first:
        parts.append('the first request of this VM waited %s s, as enabling Scheduled Events can take 2 minutes'
                     % _seconds(first[0]))
    if others:
        lead = 'the others waited at most' if first else 'each waited at most'
        parts.append('%s %s s each' % (lead, _seconds(max(others))))
    return '; '.join(parts)


def _timeout_advice(patience_spent):
    if len(patience_spent) == 1 and patience_spent[0][1]:
        return 'Scheduled Events may still be being enabled for this VM: try again in a minute.'
    return 'If IMDS is only slow, raise timeout (each attempt) or deadline (the whole operation).'


class ImdsClient(object):
    """Talks to one VM's IMDS Scheduled Events endpoint.

    ``sleep`` and ``monotonic`` are injectable so waiting logic is testable
    without real time; ``transport`` so the daemon can use its own session.

    Every operation (``get_document``, ``approve``, ``get_json``) ends within
    ``deadline`` seconds, or by the caller's own ``deadline`` if sooner:
    ``timeout`` bounds each attempt, the deadline the whole operation. The
    long first-call allowance is given once in the client's life, to its
    first Scheduled Events request, answered or not (``first_call_spent``
    lets a rebuilt client skip it). ``cancelled`` (a callable) is asked
    before every retry; when it returns true the operation ends with
    RequestCancelledError instead of retrying, so a stopping service never
    spins through a retry loop whose sleeps return at once.
    """

    def __init__(self, endpoint=DEFAULT_ENDPOINT, api_version=DEFAULT_API_VERSION, timeout=DEFAULT_TIMEOUT,
                 retries=DEFAULT_RETRIES, transport=None, policy=None, sleep=time.sleep, monotonic=time.monotonic,
                 first_call_timeout=FIRST_CALL_TIMEOUT, connect_timeout=CONNECT_TIMEOUT, deadline=DEFAULT_DEADLINE,
                 first_call_spent=False, cancelled=None):
        self.endpoint = validate_endpoint(endpoint)
        self.api_version = validate_api_version(api_version)
        timeout_seconds = _number_or_none(timeout, float)
        if timeout_seconds is None or timeout_seconds <= 0:
            raise InvalidParameterError('timeout must be a positive number of seconds, got %r' % (timeout,))
        retry_count = _number_or_none(retries, int)
        if retry_count is None or retry_count < 0:
            raise InvalidParameterError('retries must be a whole number, 0 or more, got %r' % (retries,))
        deadline_seconds = _number_or_none(deadline, float)
        if deadline_seconds is None or deadline_seconds <= 0:
            raise InvalidParameterError('deadline must be a positive number of seconds, got %r' % (deadline,))
        self.timeout = timeout_seconds
        self.deadline = deadline_seconds
        self.first_call_pending = not first_call_spent
        self.cancelled = cancelled or (lambda: False)
        self.first_call_timeout = max(float(first_call_timeout), self.timeout)
        self.connect_timeout = min(float(connect_timeout), self.timeout)
        self.transport = transport or HttpClientTransport()
        self.policy = policy or RetryPolicy(retries=retry_count)
        self.sleep = sleep
        self.monotonic = monotonic
        self.attempt_log = []
        # Whether the endpoint ever answered this client: only then is
        # "is this an Azure VM?" no longer a question worth asking.
        self.answered = False

    def _record_attempt(self, method, url, outcome):
        # Long-running pollers (the daemon, the EDA source) keep one client
        # for days: keep only the recent attempts so memory stays flat.
        self.attempt_log.append((method, url, outcome))
        if len(self.attempt_log) > 2 * ATTEMPT_LOG_SIZE:
            del self.attempt_log[:-ATTEMPT_LOG_SIZE]

    @property
    def events_url(self):
        """The scheduledevents URL with its mandatory api-version."""
        return '%s?api-version=%s' % (self.endpoint, self.api_version)

    def close(self):
        """Release the transport's kept-alive connection."""
        close = getattr(self.transport, 'close', None)
        if close:
            close()

    def _headers(self, body):
        # Only what IMDS needs: Metadata proves the request was meant for it
        # and X-Forwarded-For is never added (IMDS rejects it).
        headers = {'Metadata': 'true', 'User-Agent': USER_AGENT}
        if body is not None:
            headers['Content-Type'] = 'application/json'
        return headers

    def operation_deadline(self, deadline=None):
        """The ``monotonic`` time an operation starting now must end by: the caller's or the client's, whichever is first."""
        own = self.monotonic() + self.deadline
        return own if deadline is None else min(own, deadline)

    def _attempt_timeout(self, url, read_timeout, remaining):
        """The read timeout of the next attempt, and whether it spends the first-call allowance."""
        patience = read_timeout or self.timeout
        first_call = False
        if self.first_call_pending and url.split('?', 1)[0] == self.endpoint:
            # Once, whatever happens: a hung IMDS must not get two minutes per attempt.
            self.first_call_pending = False
            patience = max(patience, self.first_call_timeout)
            first_call = True
        return min(patience, max(remaining, MIN_ATTEMPT_SECONDS)), first_call

    def request(self, method, url, body=None, read_timeout=None, deadline=None):
        """Send a request with the retry policy; return the HttpResponse of a 2xx answer.

        ``deadline`` (a ``monotonic`` value) bounds the whole request,
        attempts and waits included, together with the client's own
        ``deadline``. Raises the matching ScheduledEventsError otherwise.
        """
        started = self.monotonic()
        deadline = self.operation_deadline(deadline)
        attempt = 0
        patience_spent = []
        while True:
            attempt += 1
            status, failure, error, response = None, None, None, None
            attempt_timeout, first_call = self._attempt_timeout(url, read_timeout, deadline - self.monotonic())
            patience_spent.append((attempt_timeout, first_call))
            try:
                response = self.transport.request(method, url, self._headers(body), body,
                                                  connect_timeout=min(self.connect_timeout, attempt_timeout),
                                                  read_timeout=attempt_timeout)
            except ImdsTimeoutError as exc:
                failure, error = 'timeout', exc
            except ImdsUnreachableError as exc:
                failure, error = 'connection failure', exc
            if response is not None:
                self.answered = True
                status = response.status
                if 200 <= status < 300:
                    self._record_attempt(method, url, status)
                    return response
                if 300 <= status < 400:
                    raise ImdsRedirectError(
                        'IMDS at %s answered HTTP %d redirecting to %r. IMDS never redirects, so something between '
                        'this host and IMDS (a proxy or an interception) answered instead; redirects are not followed. '
                        'Reach IMDS directly.' % (url, status, response.headers.get('location')), url=url)
                error = _http_error(method, url, status, response.body, attempt, response.headers)
            self._record_attempt(method, url, status if status is not None else failure)
            now = self.monotonic()
            decision = self.policy.decide(attempt, now - started, status=status, failure=failure,
                                          retry_after=_retry_after(response.headers) if response else None,
                                          remaining=deadline - now)
            if not decision.retry:
                raise self._final_error(error, method, url, status, attempt, now - started, patience_spent,
                                        response.headers if response else None)
            if self.cancelled():
                raise RequestCancelledError('%s %s was not retried: the caller is stopping (last: %s)'
                                            % (method, url, decision.reason), url=url)
            self.sleep(decision.delay)

    def _final_error(self, error, method, url, status, attempts, elapsed, patience_spent, headers):
        if status is not None:
            # Rebuild so the message counts every attempt.
            return _http_error(method, url, status, error.body, attempts, headers)
        if isinstance(error, ImdsTimeoutError):
            return ImdsTimeoutError(
                'IMDS at %s did not answer %s in %.1f s (%s; the deadline is %s s). %s %s'
                % (url, _attempts_text(attempts), elapsed, _patience_text(patience_spent, self.first_call_timeout), _seconds(self.deadline),
                   _timeout_advice(patience_spent), self._unreachable_hint()), url=url)
        return ImdsUnreachableError('IMDS unreachable at %s after %d attempts in %.1f s (%s). %s'
                                    % (url, attempts, elapsed, error.message, self._unreachable_hint()), url=url)

    def _unreachable_hint(self):
        if self.answered:
            return 'It answered earlier: the VM may be restarting, or IMDS busy.'
        return _UNREACHABLE_HINT

    def _read_document(self, deadline=None):
        """GET the events document: ``(raw, decoding_warnings)``; malformed answers are retried like failures."""
        started = self.monotonic()
        deadline = self.operation_deadline(deadline)
        attempt = 0
        while True:
            attempt += 1
            response = self.request('GET', self.events_url, deadline=deadline)
            try:
                document, warnings = decode_body(response.body)
                parse_document(document, self.api_version)
                return document, warnings
            except MalformedDocumentError as exc:
                now = self.monotonic()
                decision = self.policy.decide(attempt, now - started, failure='malformed document',
                                              remaining=deadline - now)
                if not decision.retry or self.cancelled():
                    raise MalformedDocumentError('%s (from %s, %d attempts)' % (exc.message, self.events_url, attempt),
                                                 url=self.events_url)
                self.sleep(decision.delay)

    def get_raw_document(self, deadline=None):
        """GET the events document and return it decoded, untouched (a dict)."""
        return self._read_document(deadline)[0]

    def get_document(self, deadline=None):
        """GET and normalize: returns ``(normalized, raw)``.

        ``normalized`` is ``{'document_incarnation', 'events', 'warnings'}``;
        the warnings include what decoding the body had to repair.
        """
        raw, decoding_warnings = self._read_document(deadline)
        normalized = parse_document(raw, self.api_version)
        normalized['warnings'] = decoding_warnings + normalized['warnings']
        return normalized, raw

    def approve(self, event_ids, deadline=None):
        """POST one StartRequests body approving every id in ``event_ids``.

        Ids that differ only in case or braces are one event: it is sent once,
        spelled as first given.
        """
        ids, seen = [], set()
        for event_id in event_ids:
            key = event_id_key(event_id)
            if key and key not in seen:
                seen.add(key)
                ids.append(str(event_id))
        if not ids:
            raise InvalidParameterError('no event ids to approve')
        body = json.dumps({'StartRequests': [{'EventId': event_id} for event_id in ids]}).encode('utf-8')
        self.request('POST', self.events_url, body=body, deadline=deadline)
        return ids

    def get_json(self, path_and_query, deadline=None):
        """GET another IMDS path on the same origin and return its JSON."""
        url = origin_of(self.endpoint) + path_and_query
        response = self.request('GET', url, deadline=deadline)
        try:
            return decode_document(response.body)
        except MalformedDocumentError as exc:
            raise MalformedDocumentError('%s (from %s)' % (exc.message, url), url=url)


__all__ = ['ImdsClient', 'DEFAULT_ENDPOINT', 'DEFAULT_TIMEOUT', 'DEFAULT_RETRIES', 'ScheduledEventsError',
           'origin_of', 'validate_api_version', 'validate_endpoint']
