# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The action plugin of a task that runs on the controller only, loaded as ansible-playbook loads it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from types import SimpleNamespace

from ansible.playbook.task import Task
from ansible.plugins.loader import action_loader


def controller_task(name, args, check_mode=False):
    """The action plugin of ``azure_maintenance.scheduled_events.<name>`` for a task with ``args``."""
    fqcn = 'azure_maintenance.scheduled_events.' + name
    task = Task.load({fqcn: args})
    task.check_mode = check_mode
    # A connection that is never used: the task sends nothing to the host.
    connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir='/nonexistent'))
    return action_loader.get(fqcn, task=task, connection=connection, play_context=None, loader=None, templar=None,
                             shared_loader_obj=None)
