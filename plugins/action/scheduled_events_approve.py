# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin of scheduled_events_approve: the Python module on POSIX targets, win_uri requests on Windows ones.

Everything is in plugin_utils/_scheduled_events_action.py; the module's own
code decides, whichever way the requests travel. With ``via: arm`` nothing
goes to the target: plugin_utils/_approve_via_arm.py approves this host's VM
through Azure Resource Manager from the controller.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_arm_options import VIA_ARM
from ansible_collections.azure_maintenance.scheduled_events.plugins.modules import scheduled_events_approve
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._approve_via_arm import approve_via_arm
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._rolling_fleet import (
    IDENTITY_VARIABLES,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._scheduled_events_action import (
    ScheduledEventsAction,
    validated_params,
)


class ActionModule(ScheduledEventsAction):
    MODULE = 'azure_maintenance.scheduled_events.scheduled_events_approve'
    module_code = scheduled_events_approve

    def _run_without_the_target(self, task_vars):
        if self._task.args.get('via') != VIA_ARM:
            return None
        if self._task.async_val:
            raise AnsibleActionFail('%s with via=arm runs on the controller and cannot run with async; run it '
                                    'without async' % self.MODULE)
        params = validated_params(self.module_code.module_argument_spec(), self._task.args, self.MODULE)
        variables = dict((name, self._templar.template(task_vars.get(name))) for name in IDENTITY_VARIABLES)
        return approve_via_arm(params, bool(self._task.check_mode), variables)
