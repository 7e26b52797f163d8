#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: scheduled_events_fleet_approve
short_description: Approve Azure Scheduled Events through the ARM acknowledge API, from the controller
version_added: 0.2.0
description:
  - Reads the selected events from Azure Resource Graph and acknowledges (approves) them through Azure Resource Manager,
    without reaching any VM. Acknowledging an event releases it for every VM in its C(Resources), exactly as an IMDS
    approval from one of them would.
  - Keeps the safety rules of M(azure_maintenance.scheduled_events.scheduled_events_approve) that is, events are chosen
    explicitly (O(event_ids), or filters), ids are checked before anything is sent, check mode sends nothing, and an
    event already C(Started) is not acknowledged again. It adds O(allowed_vms), which refuses events that would release
    VMs outside the set, and it skips events already C(Completed) or C(Canceled).
  - Can wait, reading Resource Graph, until the events have started or are over.
author:
  - azure_maintenance.scheduled_events contributors (!UNKNOWN)
extends_documentation_fragment:
  - azure_maintenance.scheduled_events.azure_arm
  - azure_maintenance.scheduled_events.azure_arm.fleet_scope
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: In check mode nothing is acknowledged; RV(approved) lists what would be.
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
      - With filters, only events whose C(Resources) name one of these VMs (compared without case); the fleet
        counterpart of C(scope=this_vm).
      - Not used with O(event_ids).
    type: list
    elements: str
  allowed_vms:
    description:
      - The VMs that may be released, each a name as in C(Resources) (compared without case) or a VM's ARM id
        (C(/subscriptions/.../resourceGroups/.../providers/Microsoft.Compute/virtualMachines/NAME)), which allows that
        name only for events of its subscription and resource group. An event naming any other VM is never
        acknowledged (with filters it is skipped with reason V(foreign_vms); with O(event_ids) the task fails before
        acknowledging anything, unless O(outside_allowed=skip)).
      - VM names are unique only within a resource group. A bare name that the events read place in more than one
        resource group allows none of them; give ARM ids, or limit O(resource_groups).
      - When this is set, an event whose C(Resources) is empty is never acknowledged (reason V(foreign_vms)), as what it
        releases cannot be checked.
      - Without it, every VM of a selected event may be released.
    type: list
    elements: str
  event_ids:
    description:
      - Ids of the events to acknowledge (GUIDs, compared without case or braces).
      - Every id is checked before anything is sent. An id that Resource Graph does not list fails the task or is
        skipped, as O(missing) says.
      - Cannot be combined with O(event_types), O(event_sources) or O(max_duration).
    type: list
    elements: str
  event_types:
    description:
      - Acknowledge the events of these types. To acknowledge every event, list all five types.
    type: list
    elements: str
    choices: [Freeze, Reboot, Redeploy, Preempt, Terminate]
  event_sources:
    description:
      - Acknowledge the events from these sources.
    type: list
    elements: str
    choices: [Platform, User]
  max_duration:
    description:
      - Acknowledge only events whose C(DurationInSeconds) is between 0 and this value (inclusive); an unknown
        duration (V(-1)) never qualifies.
    type: int
  missing:
    description:
      - What to do with an id of O(event_ids) that Resource Graph does not list. V(fail) fails the task before
        acknowledging anything; V(ignore) skips it with reason V(gone).
    type: str
    choices: [fail, ignore]
    default: fail
  outside_allowed:
    description:
      - What to do with an event of O(event_ids) that names a VM outside O(allowed_vms).
      - V(fail) fails the task before acknowledging anything. V(skip) skips that event with reason V(foreign_vms) and
        acknowledges the others, for a caller that acknowledges several events at once and handles each refusal by
        itself (as the rolling maintenance playbook does).
      - Events selected by filters are always skipped.
    type: str
    choices: [fail, skip]
    default: fail
  wait:
    description:
      - What to wait for after acknowledging, reading Resource Graph every O(poll_interval) seconds. The events
        followed are those acknowledged and those selected but already C(Started).
      - V(started) waits until every followed event is C(Started), C(Completed), C(Canceled) or no longer listed.
      - V(completed) waits until every followed event is C(Completed), C(Canceled) or no longer listed.
    type: str
    choices: [none, started, completed]
    default: none
  wait_timeout:
    description:
      - Seconds to wait for O(wait) before failing. The failure still lists what was acknowledged.
    type: float
    default: 1800
  poll_interval:
    description:
      - Seconds between two Resource Graph reads while waiting. Resource Graph allows about 15 requests per 5 seconds
        per user, shared with every other task of the same identity.
    type: float
    default: 5
  list_form:
    description:
      - Acknowledge several events of one VM or scale set in one request (the ARM list form, C(POST
        .../providers/Microsoft.Maintenance/scheduledevents) with the event ids in the body's C(value) list,
        api-version C(2025-10-01-preview)). V(false) sends one request per event.
      - When ARM refuses the list form (HTTP 400, for example an ARM that does not know that api-version) or one of
        the events ended meanwhile (HTTP 404 or 409), the events of that request are acknowledged one by one.
    type: bool
    default: true
notes:
  - When an event ends or is cancelled between the read and the acknowledge (HTTP 404 or 409), it is skipped with
    reason V(gone) and the others are still acknowledged.
seealso:
  - module: azure_maintenance.scheduled_events.scheduled_events_fleet_info
  - module: azure_maintenance.scheduled_events.scheduled_events_approve
'''

EXAMPLES = r'''
# Inventory host names are seldom the VM names: with the azure.azcollection.azure_rm
# inventory each host has the VM's name in "name" and its ARM id in "id".
- name: Approve the User-initiated events of the web VMs as soon as they appear
  azure_maintenance.scheduled_events.scheduled_events_fleet_approve:
    resource_groups: [rg-web]
    event_sources: [User]
    vm_names: "{{ groups['web'] | map('extract', hostvars, 'name') | list }}"
    allowed_vms: "{{ groups['web'] | map('extract', hostvars, 'id') | list }}"
  delegate_to: localhost
  run_once: true

- name: Approve one event once its hosts are drained, and wait until it is over
  azure_maintenance.scheduled_events.scheduled_events_fleet_approve:
    event_ids: ["{{ event.event_id }}"]
    allowed_vms: "{{ drained_vms }}"
    wait: completed
    wait_timeout: 3600
  delegate_to: localhost
  run_once: true
'''

RETURN = r'''
changed:
  description: Whether an acknowledge was sent (in check mode, whether one would be).
  returned: always
  type: bool
approved:
  description: Ids of the events acknowledged (in check mode, that would be).
  returned: always
  type: list
  elements: str
acknowledged_arm_ids:
  description: The ARM ids acknowledged, one per event.
  returned: always
  type: list
  elements: str
skipped_events:
  description:
    - Selected events that were not acknowledged, and why.
    - V(already_started), V(gone) (not listed, or ended before the acknowledge), V(finished) (C(Completed) or
      C(Canceled)), V(foreign_vms) (names VMs outside O(allowed_vms), listed in C(foreign_vms)).
  returned: always
  type: list
  elements: dict
events:
  description: The selected events as last read, in the shape of
    M(azure_maintenance.scheduled_events.scheduled_events_fleet_info).
  returned: always
  type: list
  elements: dict
last_statuses:
  description: For each followed event, its status in the last Resource Graph read, V(gone) when not listed.
  returned: always
  type: dict
list_requests:
  description: How many list-form requests acknowledged several events at once.
  returned: always
  type: int
waited:
  description: Seconds spent waiting for O(wait).
  returned: always
  type: float
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_approval import (
    MISSING_CHOICES,
    OUTSIDE_ALLOWED_CHOICES,
    SCOPE_ALL,
    SKIP_ALREADY_STARTED,
    SKIP_GONE,
    WAIT_CHOICES,
    WAIT_NONE,
    validate_selection,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_arm import (
    ArmError,
    client_from_options,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import ScheduledEventsError
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_arm_options import (
    ARM_ARGUMENT_SPEC,
    FLEET_SCOPE_ARGUMENT_SPEC,
    LIST_FORM_SPEC,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_fleet_approval import (
    ACK_API_VERSION,
    ACK_LIST_API_VERSION,
    ack_batches,
    ack_list_path,
    ack_path,
    fleet_statuses,
    fleet_wait_satisfied,
    plan_fleet_approval,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_graph import read_fleet


def module_argument_spec():
    spec = dict(ARM_ARGUMENT_SPEC)
    spec.update(FLEET_SCOPE_ARGUMENT_SPEC)
    del spec['event_statuses']
    spec.update({
        'allowed_vms': {'type': 'list', 'elements': 'str'},
        'event_types': {'type': 'list', 'elements': 'str', 'choices': ['Freeze', 'Reboot', 'Redeploy', 'Preempt',
                                                                       'Terminate']},
        'event_sources': {'type': 'list', 'elements': 'str', 'choices': ['Platform', 'User']},
        'max_duration': {'type': 'int'},
        'missing': {'type': 'str', 'default': 'fail', 'choices': list(MISSING_CHOICES)},
        'outside_allowed': {'type': 'str', 'default': 'fail', 'choices': list(OUTSIDE_ALLOWED_CHOICES)},
        'wait': {'type': 'str', 'default': WAIT_NONE, 'choices': list(WAIT_CHOICES)},
        'wait_timeout': {'type': 'float', 'default': 1800.0},
        'poll_interval': {'type': 'float', 'default': 5.0},
        'list_form': LIST_FORM_SPEC,
    })
    return spec


class FleetApproval(object):
    """One run of the module: read, plan, acknowledge, wait; ``result`` is always complete enough to report."""

    def __init__(self, module, client):
        self.module = module
        self.params = module.params
        self.client = client
        self.result = {'changed': False, 'approved': [], 'acknowledged_arm_ids': [], 'skipped_events': [],
                       'events': [], 'last_statuses': {}, 'waited': 0.0, 'list_requests': 0}

    def read(self, event_ids=None):
        params = self.params
        self.client.renew()
        fleet = read_fleet(self.client, params['subscriptions'], params['resource_groups'], params['resource_names'],
                           event_ids, params['page_size'])
        for warning in fleet['warnings']:
            self.module.warn(warning)
        return fleet['events']

    def acknowledge_one(self, event):
        try:
            self.client.post(ack_path(event['arm_id']), ACK_API_VERSION, None)
        except ArmError as exc:
            # Ended or cancelled since the read: the same race IMDS approval handles.
            if exc.status in (404, 409):
                self.result['skipped_events'].append({'event_id': event['event_id'], 'reason': SKIP_GONE})
                return
            raise
        self.acknowledged(event)

    def acknowledged(self, event):
        self.result['approved'].append(event['event_id'])
        self.result['acknowledged_arm_ids'].append(event['arm_id'])
        # At once: a later acknowledge that fails must not report this one as no change.
        self.result['changed'] = True

    def acknowledge(self, plan):
        if self.module.check_mode:
            self.result['approved'] = [event['event_id'] for event in plan.approve]
            self.result['changed'] = bool(plan.approve)
            return
        for owner, events in ack_batches(plan.approve):
            if self.params['list_form'] and len(events) > 1:
                try:
                    self.client.post(ack_list_path(owner), ACK_LIST_API_VERSION,
                                     {'value': [event['event_id'] for event in events]})
                except ArmError as exc:
                    # 400: this ARM does not know the list form; 404/409: one
                    # of the events ended meanwhile. One by one tells which.
                    if exc.status not in (400, 404, 409):
                        raise
                else:
                    for event in events:
                        self.acknowledged(event)
                    self.result['list_requests'] += 1
                    continue
            for event in events:
                self.acknowledge_one(event)
        self.result['changed'] = bool(self.result['approved'])

    def wait(self, followed):
        params = self.params
        started = self.client.monotonic()
        deadline = started + params['wait_timeout']
        while True:
            statuses = fleet_statuses(self.read(followed), followed)
            self.result['last_statuses'] = statuses
            self.result['waited'] = round(self.client.monotonic() - started, 3)
            if fleet_wait_satisfied(params['wait'], statuses):
                return
            if self.client.monotonic() + params['poll_interval'] > deadline:
                self.module.fail_json(msg='Timed out after %.0f s waiting for %s %s: last statuses %s'
                                      % (params['wait_timeout'], ', '.join(followed), params['wait'], statuses),
                                      **self.result)
            self.client.pause(params['poll_interval'])

    def selection(self):
        """What the task selects; a fleet approval has no "this VM", so its scope is every VM."""
        params = self.params
        return validate_selection(params['event_ids'], params['event_types'], params['event_sources'],
                                  params['max_duration'], SCOPE_ALL, False, params['missing'], params['outside_allowed'])

    def plan(self, events, selection):
        return plan_fleet_approval(events, selection, self.params['vm_names'], self.params['allowed_vms'])

    def reported_events(self, events, plan):
        """The events the result lists: those selected (approved or skipped)."""
        return plan.approve + [event for event in events
                               if any(entry['event_id'] == event['event_id'] for entry in plan.skipped)]

    def run(self):
        params = self.params
        selection = self.selection()
        events = self.read(selection.event_ids)
        plan = self.plan(events, selection)
        self.result['events'] = self.reported_events(events, plan)
        self.result['skipped_events'] = list(plan.skipped)
        self.acknowledge(plan)
        followed = list(self.result['approved']) + [entry['event_id'] for entry in plan.skipped
                                                    if entry['reason'] == SKIP_ALREADY_STARTED]
        self.result['last_statuses'] = fleet_statuses(events, followed)
        if params['wait'] != WAIT_NONE and followed and not self.module.check_mode:
            self.wait(followed)
        return self.result


def run_module(module, client=None, make_runner=FleetApproval):
    """Approve as the parameters say and exit with the result; every error becomes fail_json.

    ``make_runner(module, client)`` builds the FleetApproval (or subclass) to
    run: scheduled_events_approve's ``via: arm`` passes one made for its host's VM.
    """
    runner = None
    try:
        if module.params['poll_interval'] <= 0 or module.params['wait_timeout'] < 0:
            module.fail_json(msg='poll_interval must be more than 0 and wait_timeout 0 or more seconds')
        runner = make_runner(module, client or client_from_options(module.params))
        result = runner.run()
    except ScheduledEventsError as exc:
        module.fail_json(msg=exc.message, **(runner.result if runner is not None else {}))
    module.exit_json(**result)


def main():
    module = AnsibleModule(argument_spec=module_argument_spec(), supports_check_mode=True)
    run_module(module)


if __name__ == '__main__':
    main()
