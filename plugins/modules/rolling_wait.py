#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: rolling_wait
short_description: Wait on the controller until the next round of rolling maintenance is due
version_added: 0.2.0
description:
  - Used by C(azure_maintenance.scheduled_events.rolling_maintenance) between two rounds; it runs on the controller only
    (an action plugin) and sends nothing to any host.
  - Waits O(seconds) seconds in the process that runs the task and returns. Unlike C(ansible.builtin.wait_for), no
    module is started for it (a Python interpreter that loads a module costs about a quarter of a second of CPU and
    of waiting each time), and unlike C(ansible.builtin.pause), it prints nothing, whatever the output callback.
author:
  - azure_maintenance.scheduled_events contributors (!UNKNOWN)
extends_documentation_fragment:
  - azure_maintenance.scheduled_events.controller_task
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: It waits in check mode too; it changes nothing either way.
options:
  seconds:
    description:
      - How long to wait, in seconds; fractions count. Zero or less returns at once, so that the time a round due
        already can be passed as it is.
    type: float
    required: true
  max_seconds:
    description:
      - The longest wait, whatever O(seconds) says, so that a value computed from clocks never holds a run up for long.
    type: float
    default: 3600
'''

EXAMPLES = r'''
- name: Wait until the next round is due, poll_interval seconds after this one began
  azure_maintenance.scheduled_events.rolling_wait:
    seconds: "{{ round_began + poll_interval - now().timestamp() }}"
    max_seconds: "{{ poll_interval }}"
  run_once: true
'''

RETURN = r'''
waited:
  description: The seconds waited, rounded to the millisecond.
  returned: success
  type: float
  sample: 3.412
'''

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._controller_only import (
    refuse_outside_the_controller,
)


def module_argument_spec():
    return dict(
        seconds={'type': 'float', 'required': True},
        max_seconds={'type': 'float', 'default': 3600},
    )


def main():
    refuse_outside_the_controller('rolling_wait', module_argument_spec())


if __name__ == '__main__':
    main()
