# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The tasks that run on the controller only, through their action plugin
    # (plugins/plugin_utils/_controller_action.py), said once for all of them;
    # each module says how it treats check mode.

    DOCUMENTATION = r'''
attributes:
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the
      controller.
    support: full
    details: Everything runs on the controller.
'''
