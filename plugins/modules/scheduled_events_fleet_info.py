#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: scheduled_events_fleet_info
short_description: Read the Scheduled Events of a whole Azure fleet from Azure Resource Graph
version_added: 0.2.0
description:
  - Queries Azure Resource Graph (table C(maintenanceresources)) for the Scheduled Events of every VM and scale set in
    the given subscriptions, resource groups or resources, with one query and no connection to any VM.
  - Returns the events normalized like M(azure_maintenance.scheduled_events.scheduled_events_info) does, plus what only
    Azure Resource Manager knows, that is the ARM ids, subscription and resource group, and the two statuses IMDS never
    shows, C(Completed) and C(Canceled).
  - Pages through large fleets (C($skipToken)) and follows Resource Graph's throttling (C(x-ms-user-quota-remaining),
    HTTP 429 with C(Retry-After)) within O(timeout).
  - Only VMs, availability sets and scale sets that publish their events (C(scheduledEventsPolicy)) appear; see
    docs/fleet_plane.md of the collection.
author:
  - azure_maintenance.scheduled_events contributors (!UNKNOWN)
extends_documentation_fragment:
  - azure_maintenance.scheduled_events.azure_arm
  - azure_maintenance.scheduled_events.azure_arm.fleet_scope
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: The module only reads; it behaves the same in check mode.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
  action_group:
    description: Use C(group/azure_maintenance.scheduled_events.fleet_plane) in C(module_defaults) to set defaults.
    support: full
    membership:
      - azure_maintenance.scheduled_events.fleet_plane
options:
  vm_names:
    description:
      - Only events whose C(Resources) name one of these VMs (compared without case). Scale-set instances are named
        like C(myScaleSet_3), as in IMDS.
    type: list
    elements: str
  event_ids:
    description:
      - Only these events (EventIds, compared without case and braces).
    type: list
    elements: str
  event_types:
    description:
      - Only events of these C(EventType)s (compared without case), such as C(Freeze), C(Reboot), C(Redeploy),
        C(Preempt), C(Terminate).
    type: list
    elements: str
  event_statuses:
    description:
      - Only events with these C(EventStatus)es (compared without case), C(Scheduled), C(Started), C(Completed) or
        C(Canceled).
    type: list
    elements: str
  event_sources:
    description:
      - Only events with these C(EventSource)s, C(Platform) or C(User) (compared without case).
    type: list
    elements: str
notes:
  - Resource Graph's data lags the platform by seconds; a status just changed may show on the next read.
seealso:
  - module: azure_maintenance.scheduled_events.scheduled_events_fleet_approve
  - module: azure_maintenance.scheduled_events.scheduled_events_info
  - name: Azure Resource Graph
    description: The Azure documentation of Resource Graph queries.
    link: https://learn.microsoft.com/azure/governance/resource-graph/overview
'''

EXAMPLES = r'''
- name: Every Scheduled Event of two resource groups, from the controller
  azure_maintenance.scheduled_events.scheduled_events_fleet_info:
    subscriptions: [8d10da13-8125-4ba9-a717-bf7490507b3d]
    resource_groups: [rg-web, rg-db]
  delegate_to: localhost
  run_once: true
  register: fleet

- name: Events still to come for the VMs of the web group
  ansible.builtin.debug:
    msg: "{{ fleet.events | selectattr('event_status', 'eq', 'Scheduled') | map(attribute='resources') | list }}"

- name: With a service principal in a sovereign cloud
  azure_maintenance.scheduled_events.scheduled_events_fleet_info:
    cloud_environment: AzureUSGovernment
    client_id: "{{ sp_client_id }}"
    secret: "{{ sp_secret }}"
    tenant: "{{ sp_tenant }}"
    vm_names: "{{ groups['web'] | map('extract', hostvars, 'name') | list }}"  # VM names, from the azure_rm inventory
  delegate_to: localhost
  run_once: true
  register: fleet
'''

RETURN = r'''
events:
  description:
    - One entry per event (an event owned by several VMs of an availability set comes back once, with every ARM id),
      in the order of the first row seen.
    - The keys of M(azure_maintenance.scheduled_events.scheduled_events_info) events (without what only makes sense for
      one VM, C(affects_this_vm) and C(is_leader)), plus the ARM keys below.
  returned: success
  type: list
  elements: dict
  contains:
    event_id:
      description: The EventId, the same as in IMDS.
      type: str
    event_type:
      description: C(Freeze), C(Reboot), C(Redeploy), C(Preempt) or C(Terminate).
      type: str
    event_status:
      description: C(Scheduled), C(Started), or, seen only from outside the VM, C(Completed) or C(Canceled).
      type: str
    resource_type:
      description: C(VirtualMachine).
      type: str
    resources:
      description: The VMs affected, named as IMDS names them.
      type: list
      elements: str
    not_before:
      description: C(NotBefore) in ISO 8601 UTC, or null once Started or when unknown.
      type: str
    not_before_raw:
      description: C(NotBefore) as Azure wrote it.
      type: str
    description:
      description: The event's description.
      type: str
    event_source:
      description: C(Platform) or C(User).
      type: str
    duration_in_seconds:
      description: Expected impact in seconds, -1 when unknown.
      type: int
    leader:
      description: The first entry of RV(events[].resources), the usual approver.
      type: str
    seconds_until_not_before:
      description: Seconds until C(NotBefore) (negative once passed), null without one.
      type: int
    arm_id:
      description:
        - The ARM id of the event (its first row), such as
          C(/subscriptions/SUB/resourcegroups/RG/providers/Microsoft.Compute/virtualMachines/VM/providers/Microsoft.Maintenance/scheduledevents/ID).
      type: str
    arm_ids:
      description: Every ARM id of the event, one per VM or scale set owning it.
      type: list
      elements: str
    arm_resources:
      description: The VMs or scale sets owning the event, as C(kind) (C(virtualMachines) or C(virtualMachineScaleSets))
        and C(name).
      type: list
      elements: dict
    subscription_id:
      description: The subscription of the event's (first) resource.
      type: str
    resource_group:
      description: The resource group of the event's (first) resource, as Resource Graph writes it (lower case).
      type: str
    location:
      description: The Azure region.
      type: str
query:
  description: The Resource Graph query sent.
  returned: success
  type: str
pages:
  description: How many Resource Graph pages were read.
  returned: success
  type: int
rows:
  description: How many rows Resource Graph returned (before merging rows of one event and the client-side filters).
  returned: success
  type: int
throttled_waits:
  description: How many times the module waited for throttling or a retry.
  returned: success
  type: int
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_arm import client_from_options
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_arm_options import (
    ARM_ARGUMENT_SPEC,
    FLEET_SCOPE_ARGUMENT_SPEC,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import ScheduledEventsError
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_graph import (
    read_fleet,
    select_fleet_events,
)


def module_argument_spec():
    spec = dict(ARM_ARGUMENT_SPEC)
    spec.update(FLEET_SCOPE_ARGUMENT_SPEC)
    return spec


def run_module(module, client=None):
    params = module.params
    try:
        client = client or client_from_options(params)
        fleet = read_fleet(client, params['subscriptions'], params['resource_groups'], params['resource_names'],
                           params['event_ids'], params['page_size'])
    except ScheduledEventsError as exc:
        module.fail_json(msg=exc.message)
    for warning in fleet['warnings']:
        module.warn(warning)
    events = select_fleet_events(fleet['events'], params['vm_names'], params['event_types'],
                                 params['event_statuses'], params['event_sources'])
    module.exit_json(changed=False, events=events, query=fleet['query'], pages=fleet['pages'], rows=fleet['rows'],
                     throttled_waits=client.throttled_waits)


def main():
    module = AnsibleModule(argument_spec=module_argument_spec(), supports_check_mode=True)
    run_module(module)


if __name__ == '__main__':
    main()
