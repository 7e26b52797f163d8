# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The module file of a task that runs on the controller only, through its action plugin. Internal use only.

Such a module file holds the documentation and the argument spec the action
plugin validates against; it runs only when the action plugin was bypassed
(the file run by hand, or copied to a host), and then says how to call it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.basic import AnsibleModule


def refuse_outside_the_controller(name, argument_spec):
    """Fail the module run ``name`` (its short name), pointing to the task that runs it on the controller."""
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    module.fail_json(msg='%s runs on the controller through its action plugin; call it as '
                         'azure_maintenance.scheduled_events.%s in a play, not as a module file' % (name, name))
