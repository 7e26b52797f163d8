# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test plumbing: one request to the IMDS simulator's control API, sent from the controller.

The integration targets set the simulator up, create events and read its
logs with a few hundred requests per run. ansible.builtin.uri starts a Python
module for each of them (about 0.3 CPU-s apiece, most of a target's time);
this action sends the request from the worker that runs the task, with the
standard library only. It takes the uri arguments the targets use (url,
method, body, headers, status_code, timeout) and returns what they read
(status, json, msg), so a task reads the same either way. Requests to the
code under test still go through the collection's own modules and
ansible.builtin.uri.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from urllib.error import HTTPError, URLError
from urllib.request import ProxyHandler, Request, build_opener

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

METHODS = ('GET', 'POST', 'PUT', 'DELETE')


def expected_statuses(value):
    """``status_code`` as a list of whole numbers (uri takes one number or a list)."""
    values = value if isinstance(value, (list, tuple)) else [value]
    if not all(str(item).strip().isdigit() for item in values):
        raise AnsibleActionFail('simulator_control: status_code must be a number or a list of numbers, got %r'
                                % (value,))
    return [int(item) for item in values]


def send(url, method, body, timeout, headers):
    """``(status, text of the answer, reason)`` of one request; a refused connection is status -1, as uri says."""
    data = None
    headers = dict(headers)
    if body is not None:
        data = json.dumps(body).encode('utf-8')
        headers['Content-Type'] = 'application/json'
    # The simulator is on loopback: a proxy from the environment must not see it.
    opener = build_opener(ProxyHandler({}))
    try:
        with opener.open(Request(url, data=data, headers=headers, method=method), timeout=timeout) as response:
            return response.status, response.read().decode('utf-8', 'replace'), response.reason
    except HTTPError as error:
        return error.code, error.read().decode('utf-8', 'replace'), error.reason
    except (URLError, OSError) as error:
        return -1, '', str(getattr(error, 'reason', error))


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(('url', 'method', 'body', 'headers', 'status_code', 'timeout'))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self._task.args
        url = args.get('url')
        if not url:
            raise AnsibleActionFail('simulator_control: url is required (the control URL and a path)')
        method = str(args.get('method', 'GET')).upper()
        if method not in METHODS:
            raise AnsibleActionFail('simulator_control: method must be one of %s, got %r' % (', '.join(METHODS), method))
        statuses = expected_statuses(args.get('status_code', 200))
        headers = args.get('headers') or {}
        if not isinstance(headers, dict):
            raise AnsibleActionFail('simulator_control: headers must be a mapping of header names to values, got %r'
                                    % (headers,))
        status, text, reason = send(str(url), method, args.get('body'), float(args.get('timeout', 15)),
                                    {str(name): str(value) for name, value in headers.items()})
        result.update(changed=False, status=status, url=url, msg='%s %s: %s %s' % (method, url, status, reason))
        try:
            result['json'] = json.loads(text)
        except ValueError:
            if text:
                result['content'] = text
        if status not in statuses:
            result['failed'] = True
            result['msg'] = 'Status code was %s and not %s: %s' % (status, statuses, result['msg'])
        return result
