# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters behind rolling_maintenance.yml with rolling_source resource_graph: rolling_fleet_setup,
rolling_fleet_reconcile, rolling_fleet_allowed_vms.

Their documentation is in the .yml file named after each filter; the logic is
in plugin_utils/_rolling_fleet.py, and the decisions in the same planner as
with IMDS (plugin_utils/_rolling_controller.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.azure_maintenance.scheduled_events.plugins.filter.rolling import (
    _epoch,
    _mapping,
    _plain,
    _setup,
    participants,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._rolling_controller import reconcile
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._rolling_fleet import (
    IDENTITY_VARIABLES,
    acknowledgeable_vms,
    approval_results,
    check_identities,
    fleet_observation,
    host_identity,
    read_scope,
    without_approvals,
)


def rolling_fleet_setup(setup, hostvars, options=None):
    """Each host's VM name and ARM id, the scope of the round's query, and problems that stop the run."""
    setup = _setup(setup, 'rolling_fleet_setup')
    if not isinstance(hostvars, Mapping):
        raise AnsibleFilterError('rolling_fleet_setup: hostvars must be the hostvars magic variable')
    identities = {}
    for host, info in setup['hosts'].items():
        variables = hostvars[host] if host in hostvars else {}
        identities[host] = host_identity(dict((name, _plain(variables.get(name))) for name in IDENTITY_VARIABLES),
                                         info.get('resource_name'))
    options = _mapping(options, 'options', 'rolling_fleet_setup')
    return {'identities': identities, 'scope': read_scope(identities, options),
            'problems': check_identities(identities)}


def rolling_fleet_allowed_vms(plan, fleet):
    """The VMs the round's ARM acknowledgement may release: those its events named when read."""
    plan = _mapping(plan, 'plan', 'rolling_fleet_allowed_vms')
    fleet = _mapping(fleet, 'fleet', 'rolling_fleet_allowed_vms')
    if not isinstance(plan.get('actions'), Mapping):
        raise AnsibleFilterError('rolling_fleet_allowed_vms: the input must be a plan of the rolling planner '
                                 '(rolling_reconcile), with its actions')
    return acknowledgeable_vms(plan['actions'], fleet.get('identities') or {})


def rolling_fleet_reconcile(state, setup, fleet, options=None, read=None, results=None, plan=None, ack=None,
                            now=None):
    """One pass of the planner fed by the fleet plane.

    With ``read`` (this round's scheduled_events_fleet_info result), the
    round's observation. With ``plan`` and ``ack`` (the plan after the hosts'
    prepare results, and the scheduled_events_fleet_approve result), the
    acknowledgements are recorded and the returned plan leaves nothing for the
    hosts to approve.
    """
    setup = _setup(setup, 'rolling_fleet_reconcile')
    fleet = _mapping(fleet, 'fleet', 'rolling_fleet_reconcile')
    options = _mapping(options, 'options', 'rolling_fleet_reconcile')
    epoch = _epoch(now)
    if plan is not None:
        plan = _mapping(plan, 'plan', 'rolling_fleet_reconcile')
        results = approval_results(plan['actions'].get('approve') or {}, _plain(ack), epoch)
        out = reconcile(plan['state'], None, results, epoch, setup, options)
        out['actions'] = without_approvals(out['actions'])
        out['now'] = epoch
        out['unknown'] = []
        out['participants'] = participants(out)
        return out
    return plan_fleet_round(_plain(state) if state else None, setup, fleet, options, _plain(read),
                            _mapping(results, 'results', 'rolling_fleet_reconcile'), epoch)


def plan_fleet_round(state, setup, fleet, options, read, results, epoch):
    """rolling_fleet_reconcile's observing round on arguments that are plain data already.

    The filter converts its arguments first; rolling_fleet_watch converts them
    once per task and calls this every round, since converting setup and
    fleet again cost most of a quiet round over 1,000 VMs.
    """
    observation, warnings = fleet_observation(read, fleet.get('identities') or {}, list(setup['hosts']), state)
    out = reconcile(state, observation, results, epoch, setup, options)
    out['warnings'] = warnings + out['warnings']
    out['now'] = epoch
    out['unknown'] = observation['unknown']
    out['participants'] = participants(out)
    return out


class FilterModule(object):

    def filters(self):
        return {
            'rolling_fleet_setup': rolling_fleet_setup,
            'rolling_fleet_reconcile': rolling_fleet_reconcile,
            'rolling_fleet_allowed_vms': rolling_fleet_allowed_vms,
        }
