# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin of rolling_fleet_watch: the fleet plane's rounds that need no host, on the controller.

The loop is plugin_utils/_rolling_fleet.py's ``watch_fleet``; each read is
scheduled_events_fleet_info's own code run in this process, and each plan
the rolling_fleet_reconcile filter's round (``plan_fleet_round``), so a round
made here is the round the playbook would make, without a task per host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.errors import AnsibleActionFail, AnsibleFilterError

from ansible_collections.azure_maintenance.scheduled_events.plugins.filter.rolling import _plain, _setup
from ansible_collections.azure_maintenance.scheduled_events.plugins.filter.rolling_fleet import plan_fleet_round
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_arm import client_from_options
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_arm_options import ARM_ARGUMENT_SPEC
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import ScheduledEventsError
from ansible_collections.azure_maintenance.scheduled_events.plugins.modules import (
    rolling_fleet_watch,
    scheduled_events_fleet_info,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._controller_action import (
    ControllerAction,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._rolling import stop_reason
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._rolling_fleet import watch_fleet
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._scheduled_events_action import (
    run_on_controller,
    validated_params,
)

MODULE = 'azure_maintenance.scheduled_events.rolling_fleet_watch'
# The settings the watch itself reads (the planner reads the others).
WATCH_SETTINGS = ('poll_interval_seconds', 'time_budget_seconds', 'settle_seconds', 'max_rounds')


def fleet_reader(params, client):
    """A function that reads the fleet once, returning what the scheduled_events_fleet_info task would register."""
    scope = (params['fleet'] or {}).get('scope') or {}
    read_args = dict((name, params[name]) for name in ARM_ARGUMENT_SPEC)
    read_args.update(subscriptions=scope.get('subscriptions') or None,
                     resource_groups=scope.get('resource_groups') or None)
    read_params = validated_params(scheduled_events_fleet_info.module_argument_spec(), read_args,
                                   'azure_maintenance.scheduled_events.scheduled_events_fleet_info')

    def read():
        # One client serves every read of the watch: each read gets the whole
        # timeout, not what the reads before it left of it.
        client.renew()
        return run_on_controller(lambda module: scheduled_events_fleet_info.run_module(module, client=client),
                                 read_params, False, 'scheduled_events_fleet_info')
    return read


def run_watch(params, check_mode, client=None, clock=time.time, sleep=time.sleep):
    """The task result of rolling_fleet_watch; ``client``, ``clock`` and ``sleep`` are for tests."""
    # Plain dicts and lists once: on ansible-core 2.19 the arguments arrive as
    # lazy containers, which every round's planner pass would otherwise walk
    # (and template, value by value) again.
    params = _plain(params)
    fleet = params['fleet'] or {}
    options = params['options']
    try:
        setup = _setup(params['setup'], 'rolling_fleet_watch')
        client = client or client_from_options(params)
    except (AnsibleFilterError, ScheduledEventsError) as exc:
        return {'failed': True, 'msg': exc.message, 'changed': False}
    started_at = params['started_at']

    def plan_round(state, read, results):
        return plan_fleet_round(state or None, setup, fleet, options, read, results, clock())

    def stop_reason_of(plan):
        return stop_reason(plan, options, started_at, check_mode)

    outcome = watch_fleet(params['state'], params['results'] or {}, fleet_reader(params, client), plan_round,
                          stop_reason_of, options['poll_interval_seconds'], clock, sleep,
                          check_mode=check_mode)
    outcome['changed'] = False
    return outcome


class ActionModule(ControllerAction):
    MODULE = MODULE
    module_code = rolling_fleet_watch

    def run_task(self, params, check_mode):
        missing = [name for name in WATCH_SETTINGS if params['options'].get(name) in (None, '')]
        if missing:
            raise AnsibleActionFail('%s: options has no %s; pass the rolling_* settings without their prefix, '
                                    'as rolling_maintenance.yml does with _rolling_cfg' % (MODULE, ', '.join(missing)))
        return run_watch(params, check_mode)
