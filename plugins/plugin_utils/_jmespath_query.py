# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""JMESPath queries for controller plugins. Internal use only.

jmespath is a controller requirement only, and only for plugins given a
query: it is imported when a query is run, so the rest of the collection works
without it. Managed nodes never need it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleError

try:
    import jmespath
    from jmespath.exceptions import JMESPathError
except ImportError:
    jmespath = None
    JMESPathError = Exception

MISSING_JMESPATH = ('The query option needs the jmespath Python library on the controller, which is missing. '
                    'Install it where ansible runs (for example "python3 -m pip install jmespath" in the same '
                    'environment as ansible-core), or drop the query and filter the result with Jinja2 instead.')


def run_query(expression, data):
    """Apply the JMESPath ``expression`` to ``data``; AnsibleError with a clear message on any failure."""
    if jmespath is None:
        raise AnsibleError(MISSING_JMESPATH)
    if not isinstance(expression, str) or not expression.strip():
        raise AnsibleError('query must be a non-empty JMESPath expression such as "events[?affects_this_vm]", got %r'
                           % (expression,))
    try:
        compiled = jmespath.compile(expression)
    except JMESPathError as exc:
        raise AnsibleError('query %r is not a valid JMESPath expression: %s' % (expression, exc))
    try:
        return compiled.search(data)
    except JMESPathError as exc:
        raise AnsibleError('query %r failed on the Scheduled Events document: %s' % (expression, exc))
