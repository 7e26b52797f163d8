# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Base of the action plugins whose whole task runs on the controller, sending nothing to the host. Internal use only.

The module file beside each one holds its documentation and argument spec
(module_utils/_controller_only.py makes the file refuse to run elsewhere).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleAction
from ansible.plugins.action import ActionBase

from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._scheduled_events_action import (
    validated_params,
)


class ControllerAction(ActionBase):
    """Subclasses set ``MODULE`` (FQCN) and ``module_code`` (the module file), and define ``run_task``."""

    MODULE = None
    module_code = None

    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ControllerAction, self).run(tmp, task_vars)
        del tmp  # tmp no longer has any effect
        try:
            params = validated_params(self.module_code.module_argument_spec(), self._task.args, self.MODULE)
            result.update(self.run_task(params, bool(self._task.check_mode)))
        except AnsibleAction as exc:
            result.update(exc.result)
        return result

    def run_task(self, params, check_mode):
        """The task's result from its validated ``params``; raise AnsibleActionFail to fail it."""
        raise NotImplementedError
