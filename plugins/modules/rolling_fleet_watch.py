#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: rolling_fleet_watch
short_description: Rolling maintenance over the fleet plane, the rounds that need no host
version_added: 0.2.0
description:
  - Used by C(azure_maintenance.scheduled_events.rolling_maintenance) with C(rolling_source=resource_graph); it runs on
    the controller only (an action plugin).
  - Reads the Scheduled Events of the whole fleet from Azure Resource Graph (as
    M(azure_maintenance.scheduled_events.scheduled_events_fleet_info) does) and plans the round with
    P(azure_maintenance.scheduled_events.rolling_fleet_reconcile#filter), round after round, C(poll_interval_seconds)
    apart, until a round has something for the hosts (a host to drain, verify, approve from or undrain, an event to
    acknowledge, a change or a warning to report) or the run must stop
    (P(azure_maintenance.scheduled_events.rolling_stop_reason#filter)). That round's plan is returned.
  - A round that only observes thus costs one Resource Graph read and one pass of the planner, whatever the number of
    hosts; the playbook's per-host tasks run only for the rounds that need them. Every round counts towards
    C(max_rounds), and the time budget ends the watch like the run.
  - A failed read is not a failure of the task; the round sees every host as unknown and is returned, as from
    M(azure_maintenance.scheduled_events.scheduled_events_fleet_info) with C(failed_when=false).
author:
  - azure_maintenance.scheduled_events contributors (!UNKNOWN)
extends_documentation_fragment:
  - azure_maintenance.scheduled_events.controller_task
  - azure_maintenance.scheduled_events.azure_arm
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: In check mode one round is made and returned, so that the playbook can show its plan.
  action_group:
    description: Use C(group/azure_maintenance.scheduled_events.fleet_plane) in C(module_defaults) to set defaults.
    support: full
    membership:
      - azure_maintenance.scheduled_events.fleet_plane
options:
  state:
    description: The planner's C(state) after the last round, or V(null) for the first round.
    type: raw
  setup:
    description: The result of P(azure_maintenance.scheduled_events.rolling_setup#filter).
    type: dict
    required: true
  fleet:
    description: The result of P(azure_maintenance.scheduled_events.rolling_fleet_setup#filter); its C(scope) is the
      scope of the read.
    type: dict
    required: true
  options:
    description:
      - The C(rolling_*) settings without their prefix. C(poll_interval_seconds), C(time_budget_seconds),
        C(settle_seconds) and C(max_rounds) are read here; the planner reads the rest.
    type: dict
    required: true
  results:
    description: What the hosts reported since the last round
      (P(azure_maintenance.scheduled_events.rolling_results#filter)); they feed the first round.
    type: dict
  started_at:
    description: When the run started, in epoch seconds.
    type: float
    required: true
notes:
  - The ARM options (O(bearer_token), O(management_endpoint) and the others) are the same as those of
    M(azure_maintenance.scheduled_events.scheduled_events_fleet_info); O(timeout) bounds each read.
'''

EXAMPLES = r'''
- name: Watch the fleet until a round has work for the hosts
  azure_maintenance.scheduled_events.rolling_fleet_watch:
    state: "{{ rolling_state }}"
    setup: "{{ rolling_setup_result }}"
    fleet: "{{ rolling_fleet_result }}"
    options: "{{ rolling_settings }}"
    started_at: "{{ started_at }}"
    bearer_token: "{{ arm_token }}"
  register: watch
  delegate_to: localhost
  run_once: true
'''

RETURN = r'''
plan:
  description: The plan of the last round made, as P(azure_maintenance.scheduled_events.rolling_fleet_reconcile#filter)
    returns it.
  returned: success
  type: dict
rounds:
  description: How many rounds this task made (reads of Resource Graph and passes of the planner).
  returned: success
  type: int
stop:
  description: Why the run ends after the returned round, or an empty string.
  returned: success
  type: str
'''

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._controller_only import (
    refuse_outside_the_controller,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_arm_options import ARM_ARGUMENT_SPEC


def module_argument_spec():
    spec = dict(ARM_ARGUMENT_SPEC)
    spec.update(
        state={'type': 'raw'},
        setup={'type': 'dict', 'required': True},
        fleet={'type': 'dict', 'required': True},
        options={'type': 'dict', 'required': True},
        results={'type': 'dict'},
        started_at={'type': 'float', 'required': True},
    )
    return spec


def main():
    refuse_outside_the_controller('rolling_fleet_watch', module_argument_spec())


if __name__ == '__main__':
    main()
