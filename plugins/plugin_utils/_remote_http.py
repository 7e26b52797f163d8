# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""IMDS requests sent by a module on the target, answered to the core. Internal use only.

On Windows targets the collection's Python modules cannot run, but IMDS is
only reachable from inside the VM. So the request itself runs on the target,
through an HTTP module Ansible already has there (``ansible.windows.win_uri``,
or ``ansible.builtin.uri`` on a POSIX host for tests), and everything else
(retries, parsing, selection, identity, approval rules, waits, deadlines)
runs on the controller in the shared core, unchanged: ``RemoteHttpTransport``
has the same ``request`` signature and returns the same ``HttpResponse`` as
the core's stdlib transport, so ``ImdsClient`` cannot tell them apart.

The mapping from a module result to an answer is pure and table-tested:
``request_arguments`` and ``response_from_result``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
from http import HTTPStatus

from ansible.errors import AnsibleConnectionFailure

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import (
    ImdsTimeoutError,
    ImdsUnreachableError,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_transport import HttpResponse

WIN_URI = 'ansible.windows.win_uri'
URI = 'ansible.builtin.uri'

# Where each module puts the HTTP status in its result. win_uri documents
# status_code; uri documents status (-1 when no answer came).
STATUS_KEY = {WIN_URI: 'status_code', URI: 'status'}
HTTP_MODULES = tuple(sorted(STATUS_KEY))

# Both modules return response headers as top-level result keys: uri lower
# cases them and turns '-' into '_'; win_uri drops '-' and snake-cases them.
# Either way these are the keys of the headers the core reads.
_RESPONSE_HEADERS = (('retry_after', 'retry-after'), ('location', 'location'), ('content_type', 'content-type'))

_STATUS_BY_NAME = dict((status.name.replace('_', '').lower(), int(status)) for status in HTTPStatus)

# Words of the modules' failure messages that mean the request timed out
# (.NET WebException "The operation has timed out", Python "timed out").
_TIMEOUT_WORDS = ('timed out', 'timeout')


class TargetUnreachableError(ImdsUnreachableError):
    """The target itself could not be reached to run the HTTP module.

    Retryable like any missing answer, so a wait rides out a host that is
    briefly away (a Freeze pauses it; WinRM drops); when it is the last
    error the action reports the host unreachable, as Ansible does.
    """


def request_arguments(module_name, method, url, headers, body=None, read_timeout=10.0):
    """The arguments of ``module_name`` that send exactly the core's request.

    No proxy (IMDS must be reached directly), no redirects (IMDS never
    redirects, so one is reported as an interception), and the body returned
    whatever its content type. Any status but 200 fails the module, whose
    result still holds the status and the body: response_from_result reads
    them as the answer they are, for the core's retry policy.
    """
    if module_name not in STATUS_KEY:
        raise ValueError('no request mapping for %r; known: %s' % (module_name, ', '.join(HTTP_MODULES)))
    arguments = {
        'url': url,
        'method': method,
        'headers': dict(headers),
        'use_proxy': False,
        'follow_redirects': 'none',
        'return_content': True,
        # Both modules take whole seconds; rounding up never cuts a wait short.
        'timeout': max(1, int(math.ceil(read_timeout))),
    }
    if body is not None:
        arguments['body'] = body.decode('utf-8') if isinstance(body, bytes) else body
    if module_name == URI:
        # uri would otherwise JSON-encode or form-encode a non-string body.
        arguments['body_format'] = 'raw'
    return arguments


def _status_of(module_name, result):
    status = result.get(STATUS_KEY[module_name])
    if isinstance(status, bool):
        return None
    if isinstance(status, str) and not status.strip().lstrip('-').isdigit():
        # win_uri copies .NET's HttpStatusCode; should it arrive by name
        # (TooManyRequests) rather than number, read the name.
        return _STATUS_BY_NAME.get(status.replace('_', '').lower())
    try:
        status = int(status)
    except (TypeError, ValueError):
        return None
    # uri says -1 when no HTTP answer came at all.
    return status if 100 <= status <= 599 else None


def _body_of(result):
    content = result.get('content')
    if isinstance(content, bytes):
        return content
    if isinstance(content, str):
        return content.encode('utf-8')
    if 'json' in result:
        # The module parsed the body and did not return it raw: encode it back.
        return json.dumps(result['json']).encode('utf-8')
    return b''


def response_from_result(module_name, url, result):
    """Turn one HTTP module result into an HttpResponse, or raise what the stdlib transport would.

    A result with an HTTP status is an answer, whatever ``failed`` says (a
    status outside the module's ``status_code`` fails the module but still
    carries the answer). Without a status: a timeout raises ImdsTimeoutError,
    an unreachable target TargetUnreachableError, anything else
    ImdsUnreachableError, each naming the module and what it said.
    """
    if not isinstance(result, dict):
        raise ImdsUnreachableError('%s returned %r instead of a result for %s' % (module_name, result, url), url=url)
    message = str(result.get('msg') or result.get('exception') or 'no message').strip()
    if result.get('unreachable'):
        raise TargetUnreachableError('the target could not be reached to run %s (%s)' % (module_name, message), url=url)
    status = _status_of(module_name, result)
    if status is None:
        if result.get('skipped'):
            raise ImdsUnreachableError('%s was skipped instead of sending the request to %s (%s)'
                                       % (module_name, url, message), url=url)
        if any(word in message.lower() for word in _TIMEOUT_WORDS):
            raise ImdsTimeoutError('%s on the target: no answer from %s in time (%s)' % (module_name, url, message),
                                   url=url)
        raise ImdsUnreachableError('%s on the target got no answer from %s (%s)' % (module_name, url, message), url=url)
    headers = {}
    for result_key, header in _RESPONSE_HEADERS:
        value = result.get(result_key)
        if value is not None:
            headers[header] = str(value)
    return HttpResponse(status, headers, _body_of(result))


class RemoteHttpTransport(object):
    """A core transport whose requests run on the target through an HTTP module.

    ``run_module(module_name, module_args, read_only)`` runs the module on the
    target and returns its result (the action plugin binds it to
    ``_execute_module``; ``read_only`` lets it run a GET even in check mode).
    ``sender_host_name`` (a callable) names the target for the core's
    host-name fallback of the VM identity.
    """

    def __init__(self, run_module, module_name, sender_host_name=None):
        if module_name not in STATUS_KEY:
            raise ValueError('no request mapping for %r; known: %s' % (module_name, ', '.join(HTTP_MODULES)))
        self.run_module = run_module
        self.module_name = module_name
        self._sender_host_name = sender_host_name
        self.requests = 0
        # The last failure to reach the target, cleared by any module run
        # that came back: the action reports it as the host being unreachable.
        self.target_failure = None

    def sender_host_name(self):
        """The target's host name: identity falls back to it, not to the controller's."""
        if self._sender_host_name is None:
            return None
        return self._sender_host_name()

    def close(self):
        """Nothing is kept open: every request is one module run."""

    def request(self, method, url, headers, body=None, connect_timeout=5.0, read_timeout=10.0):
        """Send one request from the target; same contract as the core's HttpClientTransport.request.

        ``connect_timeout`` cannot be set apart with these modules: the whole
        request is bounded by ``read_timeout``.
        """
        self.requests += 1
        arguments = request_arguments(self.module_name, method, url, headers, body, read_timeout)
        try:
            result = self.run_module(self.module_name, arguments, method in ('GET', 'HEAD'))
        except AnsibleConnectionFailure as exc:
            self.target_failure = TargetUnreachableError(
                'the target could not be reached to run %s (%s)' % (self.module_name, exc), url=url)
            raise self.target_failure
        self.target_failure = None
        try:
            return response_from_result(self.module_name, url, result)
        except TargetUnreachableError as exc:
            self.target_failure = exc
            raise
