# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin of scheduled_events_approve: the Python module on POSIX targets, win_uri requests on Windows ones.

Everything is in plugin_utils/_scheduled_events_action.py; the module's own
code decides, whichever way the requests travel.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.azure_maintenance.scheduled_events.plugins.modules import scheduled_events_approve
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._scheduled_events_action import (
    ScheduledEventsAction,
)


class ActionModule(ScheduledEventsAction):
    MODULE = 'azure_maintenance.scheduled_events.scheduled_events_approve'
    module_code = scheduled_events_approve
