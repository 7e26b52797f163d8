# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin of rolling_report: the report of a rolling maintenance run, written by the worker that runs the task.

The rolling playbook wrote it with ansible.builtin.file, copy and template,
which start five modules (a Python interpreter each) to put two files on the
controller it runs on.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import tempfile

import jinja2
from ansible.errors import AnsibleActionFail

from ansible_collections.azure_maintenance.scheduled_events.plugins.modules import rolling_report
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._controller_action import (
    ControllerAction,
)

# The page's template, shipped with the playbook (tests/docs/pictures.py draws the docs' example with it).
HTML_TEMPLATE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                             'playbooks', 'templates', 'rolling_report.html.j2')


def report_html(report):
    """The HTML page of ``report``, drawn by the Jinja2 template HTML_TEMPLATE.

    Plain Jinja2 with the options ansible.builtin.template uses by default
    (blocks trimmed, the last newline kept, no autoescape: the template
    escapes what it prints from the report): the page needs no Ansible
    filter, and this renders the same way on every ansible-core version.
    """
    with open(HTML_TEMPLATE, encoding='utf-8') as handle:
        source = handle.read()
    environment = jinja2.Environment(autoescape=False, trim_blocks=True, keep_trailing_newline=True,
                                     undefined=jinja2.StrictUndefined)
    return environment.from_string(source).render(_rolling_report=report)


def report_json(report):
    """The JSON report: indented, keys sorted, ending with a newline."""
    return json.dumps(report, indent=4, sort_keys=True, ensure_ascii=False) + '\n'


def _write_atomically(path, text, mode):
    """Write ``text`` to a new file beside ``path``, then rename it to ``path``."""
    folder = os.path.dirname(path)
    handle, temporary = tempfile.mkstemp(prefix='.' + os.path.basename(path) + '.', dir=folder)
    try:
        with os.fdopen(handle, 'w', encoding='utf-8') as out:
            out.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def write_report(report, folder, name, check_mode=False):
    """The task result of rolling_report: write ``report`` as ``folder/name.json`` and ``.html``."""
    if not name or '/' in name or name in ('.', '..'):
        raise AnsibleActionFail('rolling_report: name must be a file name without a folder, got %r' % (name,))
    paths = {'json': os.path.join(folder, name + '.json'), 'html': os.path.join(folder, name + '.html')}
    # Both drawn before anything is written: a report that cannot be drawn leaves no half of it behind.
    try:
        texts = {'json': report_json(report), 'html': report_html(report)}
    except (TypeError, ValueError, jinja2.TemplateError) as exc:
        raise AnsibleActionFail('rolling_report: cannot write this report (%s); pass the result of the '
                                'azure_maintenance.scheduled_events.rolling_report filter' % (exc,))
    if check_mode:
        return dict(changed=True, **paths)
    try:
        os.makedirs(folder, mode=0o755, exist_ok=True)
        for kind in ('json', 'html'):
            _write_atomically(paths[kind], texts[kind], 0o644)
    except OSError as exc:
        raise AnsibleActionFail('Cannot write the rolling maintenance report to %s: %s. Set rolling_report_dir to a '
                                'folder the controller can write to; the report is also in the output above.'
                                % (folder, exc))
    return dict(changed=True, **paths)


class ActionModule(ControllerAction):
    MODULE = 'azure_maintenance.scheduled_events.rolling_report'
    module_code = rolling_report

    def run_task(self, params, check_mode):
        return write_report(params['report'], params['dir'], params['name'], check_mode)
