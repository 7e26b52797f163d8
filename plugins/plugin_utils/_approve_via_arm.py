# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""scheduled_events_approve with ``via: arm``: the approval a host would send to IMDS, made through ARM. Internal use only.

The action plugin runs this on the controller. The host's VM comes from the
inventory (as with ``rolling_source: resource_graph``), its events from one
Resource Graph read, and the acknowledgement from the same code as
scheduled_events_fleet_approve (``FleetApproval``). What makes it this
host's approval and not a fleet's is the selection: ``scope`` and
``leader_only`` decide against this VM exactly as over IMDS, and a VM that
only shares this VM's name (another resource group or subscription) is
another VM, told apart by its ARM id.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_approval import (
    SCOPE_ALL,
    validate_selection,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import (
    InvalidParameterError,
    ScheduledEventsError,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_arm_options import (
    APPROVE_ARM_SUBOPTIONS,
    VIA_ARM,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_fleet_approval import plan_fleet_approval
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_select import (
    affects,
    event_id_key,
    leader_of,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.modules import scheduled_events_fleet_approve
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._rolling_fleet import (
    host_identity,
    read_scope,
    resources_as_named,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._scheduled_events_action import (
    run_on_controller,
)

SOURCE_OPTION = 'option'
SOURCE_INVENTORY = 'inventory'
# Resource Graph allows about 15 reads per 5 s per identity, shared by every
# host of the play that waits at the same time.
MIN_GRAPH_POLL_INTERVAL = 5.0
_THIS_HOST = 'this host'


def this_vm(variables, resource_name=None):
    """``(identity, source)``: this host's VM (``{'resource_name', 'arm_id'}``) and where its name came from.

    ``variables``: the host's variables named by ``_rolling_fleet.IDENTITY_VARIABLES``;
    ``resource_name``: the task's option, which wins over the inventory.
    """
    identity = host_identity(variables)
    if resource_name:
        return dict(identity, resource_name=str(resource_name)), SOURCE_OPTION
    if not identity['resource_name']:
        raise InvalidParameterError(
            'via=arm needs the name of this host\'s VM as Azure shows it in Resources: set the resource_name option '
            'or the host variable azure_scheduled_events_resource_name (hosts of the azure.azcollection.azure_rm '
            'inventory have it in their name and id variables)')
    return identity, SOURCE_INVENTORY


def fleet_parameters(params, identity):
    """The scheduled_events_fleet_approve parameters for the same approval, read in this VM's part of Azure."""
    arm = dict((name, spec.get('default')) for name, spec in APPROVE_ARM_SUBOPTIONS.items())
    arm.update(dict((name, value) for name, value in (params.get('arm') or {}).items() if value is not None))
    scope = read_scope({_THIS_HOST: identity}, arm)
    fleet = dict((name, spec.get('default'))
                 for name, spec in scheduled_events_fleet_approve.module_argument_spec().items())
    fleet.update(arm)
    fleet.update({
        'subscriptions': scope['subscriptions'], 'resource_groups': scope['resource_groups'],
        'event_ids': params.get('event_ids'), 'event_types': params.get('event_types'),
        'event_sources': params.get('event_sources'), 'max_duration': params.get('max_duration'),
        'allowed_vms': params.get('allowed_vms'), 'missing': params['missing'],
        'outside_allowed': params['outside_allowed'], 'wait': params['wait'], 'wait_timeout': params['wait_timeout'],
        'poll_interval': max(params['poll_interval'], MIN_GRAPH_POLL_INTERVAL),
    })
    return fleet


class ThisVmArmApproval(scheduled_events_fleet_approve.FleetApproval):
    """A FleetApproval that selects as scheduled_events_approve does for one VM, and reports as it does."""

    def __init__(self, module, client, identity, source, scope, leader_only):
        super(ThisVmArmApproval, self).__init__(module, client)
        self.identity = identity
        self.scope = scope
        self.leader_only = leader_only
        self.result.update({'resource_name': identity['resource_name'], 'resource_name_source': source,
                            'document_incarnation': None, 'via': VIA_ARM})

    def selection(self):
        params = self.params
        selection = validate_selection(params['event_ids'], params['event_types'], params['event_sources'],
                                       params['max_duration'], self.scope, self.leader_only, params['missing'],
                                       params['outside_allowed'])
        if selection.scope == SCOPE_ALL and selection.uses_filters:
            raise InvalidParameterError(
                'via=arm with scope=all needs event_ids: Resource Graph does not show which VMs share this VM\'s '
                'availability set, so filters would select events of every VM in %s. Name the events, use '
                'scope=this_vm, or approve for several VMs with scheduled_events_fleet_approve and its allowed_vms.'
                % ('the resource groups read' if params['resource_groups'] else 'the subscriptions read'))
        return selection

    def read(self, event_ids=None):
        events = super(ThisVmArmApproval, self).read(event_ids)
        for event in events:
            # A VM that only shares this VM's name becomes its ARM id, so
            # that neither "this VM" nor "the leader" can be mistaken.
            event['resources'] = resources_as_named(event, {_THIS_HOST: self.identity})
            event['leader'] = leader_of(event)
        return events

    def plan(self, events, selection):
        return plan_fleet_approval(events, selection, allowed_vms=self.params['allowed_vms'],
                                   resource_name=self.identity['resource_name'])

    def reported_events(self, events, plan):
        """As over IMDS: the events this VM sees (those naming it), and any other selected by id."""
        selected = set(event_id_key(entry['event_id']) for entry in plan.approve + plan.skipped)
        return [event for event in events
                if affects(event, self.identity['resource_name']) or event_id_key(event['event_id']) in selected]


def approve_via_arm(params, check_mode, variables, client=None):
    """The task result of scheduled_events_approve with ``via: arm``.

    ``params``: the task's arguments validated against the module's spec;
    ``variables``: the host's identity variables (templated); ``client``: an
    ARM client to use instead of one built from ``params['arm']`` (tests).
    """
    try:
        identity, source = this_vm(variables, params.get('resource_name'))
        fleet = fleet_parameters(params, identity)
    except ScheduledEventsError as exc:
        return {'failed': True, 'msg': exc.message, 'changed': False, 'via': VIA_ARM}

    def make_runner(module, arm_client):
        return ThisVmArmApproval(module, arm_client, identity, source, params['scope'], params['leader_only'])

    return run_on_controller(
        lambda module: scheduled_events_fleet_approve.run_module(module, client=client, make_runner=make_runner),
        fleet, check_mode, 'scheduled_events_approve via=arm')
