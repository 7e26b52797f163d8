#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: scheduled_events_approve
short_description: Approve Azure Scheduled Events so maintenance starts early, and wait for the outcome
version_added: 0.1.0
description:
  - Approves Azure Scheduled Events through the Instance Metadata Service (IMDS) of the VM the task runs on, with one
    C(POST) carrying every selected event id as C(StartRequests).
  - B(Approving an event lets it start for every VM in its Resources, not only this one.) Approve only once every
    affected VM is ready. Events are chosen by id or by filters; there is no way to approve everything by accident.
  - By default (O(scope=this_vm)) only events whose C(Resources) list this VM are approved. With O(leader_only=true)
    only the event's leader (the first VM in C(Resources)) approves, so the module can run on every host of a play
    and each event is approved by exactly one of them.
  - Idempotent. An event already C(Started) is not approved again and C(changed) is V(false) unless a C(POST) was
    made.
  - Can wait until the approved events have started or have completed.
  - With O(via=arm) the same approval is made from the controller through the Azure Resource Manager acknowledge API,
    reading the events from Azure Resource Graph, with the same selection and safety rules; nothing is sent to the
    VM, so it also serves hosts whose IMDS cannot be reached from Ansible.
author:
  - azure_maintenance.scheduled_events contributors (!UNKNOWN)
extends_documentation_fragment:
  - azure_maintenance.scheduled_events.common
  - azure_maintenance.scheduled_events.windows
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.ACTIONGROUPS
attributes:
  check_mode:
    support: full
    details:
      - Nothing is approved. The result lists what would be approved and C(changed) is what it would be.
      - O(wait) is not honoured, since nothing was approved to wait for.
  diff_mode:
    support: none
  action_group:
    membership:
      - azure_maintenance.scheduled_events.scheduled_events
options:
  event_ids:
    description:
      - Ids of the events to approve, as found in C(EventId) (GUIDs, compared without regard to case).
      - Every id is checked before anything is approved. A value that is not a GUID fails the task. An id that is
        not in the current events document fails the task or is skipped, as O(missing) says.
      - Cannot be combined with O(event_types), O(event_sources) or O(max_duration).
    type: list
    elements: str
  event_types:
    description:
      - Approve the events of these types.
      - To approve every event, list all five types.
    type: list
    elements: str
    choices: [Freeze, Reboot, Redeploy, Preempt, Terminate]
  event_sources:
    description:
      - Approve the events from these sources. V(User) events come from a restart
        or redeploy asked for by a person or a tool and are usually best approved at once, so that action is not
        delayed.
      - With O(api_version) older than 2019-08-01 events carry no source and never match this filter.
    type: list
    elements: str
    choices: [Platform, User]
  max_duration:
    description:
      - Approve only events whose C(DurationInSeconds) is between 0 and this value (inclusive).
      - An event of unknown duration (C(DurationInSeconds) V(-1), or an O(api_version) older than 2020-07-01) never
        qualifies.
    type: int
  scope:
    description:
      - Which events may be approved.
      - V(this_vm) approves only events whose C(Resources) list this VM (see O(resource_name)). An event of
        another VM of the same availability set or scale-set placement group is delivered to this VM too; such an
        event is not approved (when named in O(event_ids) it is skipped with reason V(not_this_vm)).
      - V(all) also approves events of other VMs, for a central approver that knows they are ready.
    type: str
    choices: [this_vm, all]
    default: this_vm
  leader_only:
    description:
      - Approve only events whose leader, the first VM in C(Resources), is this VM. Other events are skipped with
        reason V(not_leader).
      - Run the task on every host and each event is approved once, by its leader.
    type: bool
    default: false
  allowed_vms:
    description:
      - The VMs the approval may release, each a name as in C(Resources) (compared without case), or a VM's ARM id
        (C(/subscriptions/.../resourceGroups/.../providers/Microsoft.Compute/virtualMachines/NAME)). Give the VMs
        that are ready, such as the ones drained for the maintenance.
      - Checked against the events document read just before the approval, so it also holds when Azure added a VM
        to an event after you last looked. An event naming any other VM is never approved. With O(event_ids) the
        task fails before approving anything (the events were named as ready, so something changed, or the list is
        wrong), unless O(outside_allowed=skip); with filters the event is skipped with reason V(foreign_vms).
      - An event whose C(Resources) is empty is never approved when this is set, as what it releases cannot be checked.
      - An IMDS event carries no resource group, so there an ARM id allows its VM's name. With O(via=arm) an ARM id
        allows that name only in its subscription and resource group, as in
        M(azure_maintenance.scheduled_events.scheduled_events_fleet_approve).
      - Without it, every VM of a selected event may be released (within O(scope)).
    type: list
    elements: str
  missing:
    description:
      - What to do with an id of O(event_ids) that is not in the current events document (it may be over, or
        cancelled by Azure).
      - V(fail) fails the task before approving anything. V(ignore) skips it with reason V(gone).
    type: str
    choices: [fail, ignore]
    default: fail
  outside_allowed:
    description:
      - What to do with an event of O(event_ids) that names a VM outside O(allowed_vms).
      - V(fail) fails the task before approving anything. V(skip) skips that event with reason V(foreign_vms) and
        approves the others, for a caller that approves several events at once and handles each refusal by itself
        (as the rolling maintenance playbook does).
      - Events selected by filters are always skipped.
    type: str
    choices: [fail, skip]
    default: fail
  wait:
    description:
      - What to wait for after approving. The events followed are those approved and those selected but already
        C(Started).
      - V(none) returns at once.
      - V(started) waits until every followed event is C(Started) or gone from the document. After approval an
        event may still stay C(Scheduled) until its C(NotBefore), for example when other tenants of a shared host
        have not approved yet.
      - V(completed) waits until every followed event is gone from the document, which is how IMDS tells an event
        is over. While an event is C(Started) this VM may be frozen or rebooting, so run this on the controller
        against another VM, or expect the task to be interrupted by a reboot.
    type: str
    choices: [none, started, completed]
    default: none
  wait_timeout:
    description:
      - Seconds to wait for O(wait) before failing. The failure still lists what was approved.
      - An approval timeout is typically 15 minutes and a started event is removed about 10 minutes later.
    type: float
    default: 1800
  poll_interval:
    description:
      - Seconds between reads of the events document while waiting.
      - At least 0.25, as IMDS throttles at about 5 requests per second for all clients of the VM together.
      - With O(via=arm), at least 5, as Resource Graph allows about 15 reads per 5 seconds for one identity, shared
        by every host waiting at the same time.
    type: float
    default: 1
  via:
    description:
      - How the approval travels.
      - V(imds) sends it to the Instance Metadata Service of the VM the task runs on.
      - V(arm) reads this VM's events from Azure Resource Graph and acknowledges them through the Azure Resource
        Manager acknowledge API, from the controller; the task sends nothing to the host. This VM is the one the
        inventory names (O(resource_name), else the host variable C(azure_scheduled_events_resource_name), else the
        C(name) and C(id) variables the C(azure.azcollection.azure_rm) inventory sets). When its ARM id is known
        (C(azure_scheduled_events_arm_id), or that C(id)), a VM of the same name in another resource group or
        subscription is another VM, and Resource Graph is read only in this VM's resource group unless
        O(arm.subscriptions) or O(arm.resource_groups) say otherwise.
      - With V(arm), O(scope), O(leader_only), O(missing), check mode and O(wait) keep their meaning, reading
        Resource Graph instead of IMDS. O(scope=all) needs O(event_ids), as Resource Graph has no view of this VM's
        availability set, so filters would reach every VM of the resource group; for a fleet-wide approval use
        M(azure_maintenance.scheduled_events.scheduled_events_fleet_approve) with its
        O(azure_maintenance.scheduled_events.scheduled_events_fleet_approve#module:allowed_vms).
        The IMDS options (O(endpoint), O(timeout), O(retries), O(deadline), O(api_version)) are not used.
      - Azure marks an event C(Completed) or C(Canceled) outside the VM; such an event is skipped with reason
        V(finished).
    type: str
    choices: [imds, arm]
    default: imds
  arm:
    description:
      - How to reach Azure Resource Manager with O(via=arm), and which part of Resource Graph to read. Each
        suboption means what the option of the same name of
        M(azure_maintenance.scheduled_events.scheduled_events_fleet_approve) means.
      - Needs the C(ScheduledEventContributor) role and the Python package C(azure-identity) on the controller
        unless O(arm.bearer_token) is given; see the collection's docs/fleet_plane.md.
    type: dict
    suboptions:
      auth_source:
        description: How to get a token; see O(azure_maintenance.scheduled_events.scheduled_events_fleet_approve#module:auth_source).
        type: str
        default: auto
        choices: [auto, cli, env, msi]
      client_id:
        description: See O(azure_maintenance.scheduled_events.scheduled_events_fleet_approve#module:client_id).
        type: str
      secret:
        description: See O(azure_maintenance.scheduled_events.scheduled_events_fleet_approve#module:secret).
        type: str
      tenant:
        description: See O(azure_maintenance.scheduled_events.scheduled_events_fleet_approve#module:tenant).
        type: str
      cloud_environment:
        description: See O(azure_maintenance.scheduled_events.scheduled_events_fleet_approve#module:cloud_environment).
        type: str
        default: AzureCloud
        choices: [AzureChinaCloud, AzureCloud, AzureUSGovernment]
      management_endpoint:
        description: See O(azure_maintenance.scheduled_events.scheduled_events_fleet_approve#module:management_endpoint).
        type: str
      bearer_token:
        description: See O(azure_maintenance.scheduled_events.scheduled_events_fleet_approve#module:bearer_token).
        type: str
      timeout:
        description:
          - Seconds the whole task may take, throttling and retries included; see
            O(azure_maintenance.scheduled_events.scheduled_events_fleet_approve#module:timeout).
        type: float
        default: 120
      subscriptions:
        description:
          - The subscriptions to read; by default this VM's, from its ARM id, or every subscription the identity can
            read when the ARM id is not known.
        type: list
        elements: str
        aliases: [subscription_ids]
      resource_groups:
        description:
          - The resource groups to read; by default this VM's, from its ARM id.
        type: list
        elements: str
      page_size:
        description: See O(azure_maintenance.scheduled_events.scheduled_events_fleet_approve#module:page_size).
        type: int
        default: 1000
      list_form:
        description: See O(azure_maintenance.scheduled_events.scheduled_events_fleet_approve#module:list_form).
        type: bool
        default: true
notes:
  - IMDS answers HTTP 200 to the approval of a valid event id even when another VM approved it already.
  - When an event leaves the document between reading it and approving (IMDS then refuses the whole request), the
    document is read again, the vanished events are skipped with reason V(gone) and the others are approved.
  - HTTP 400 from IMDS fails the task with IMDS's message. HTTP 429 and 5xx are retried as O(retries) says, HTTP 410
    for up to about 70 seconds, all within O(deadline).
  - Only C(Scheduled) events are approved; the same rule holds for the hook service and the rolling playbooks.
seealso:
  - module: azure_maintenance.scheduled_events.scheduled_events_info
'''

EXAMPLES = r'''
- name: Approve the short freezes of this VM once it is drained
  azure_maintenance.scheduled_events.scheduled_events_approve:
    event_types: [Freeze]
    max_duration: 10

- name: Approve one event by id and wait until it has started
  azure_maintenance.scheduled_events.scheduled_events_approve:
    event_ids:
      - C7061BAC-AFDC-4513-B24B-AA5F13A16123
    missing: ignore
    wait: started
    wait_timeout: 900

- name: Approve reboots affecting several hosts, once per event, by its leader
  azure_maintenance.scheduled_events.scheduled_events_approve:
    event_types: [Reboot, Redeploy]
    leader_only: true
  register: approval

- name: Approve an event only while it names no VM beyond those drained for it
  azure_maintenance.scheduled_events.scheduled_events_approve:
    event_ids: ["{{ event.event_id }}"]
    scope: all
    # The VM name of each drained host, set in the inventory as the rolling playbook reads it
    allowed_vms: "{{ drained_hosts | map('extract', hostvars, 'azure_scheduled_events_resource_name') | list }}"

- name: Show which events this host left to another one
  ansible.builtin.debug:
    msg: "{{ approval.skipped_events | selectattr('reason', 'equalto', 'not_leader') | map(attribute='event_id') | list }}"

- name: Approve user-initiated maintenance at once, against the IMDS simulator
  azure_maintenance.scheduled_events.scheduled_events_approve:
    endpoint: http://127.0.0.1:18101/metadata/scheduledevents
    event_sources: [User]

- name: Approve this VM's User events through Azure Resource Manager, without reaching the VM
  azure_maintenance.scheduled_events.scheduled_events_approve:
    via: arm
    event_sources: [User]
    arm:
      auth_source: msi
  register: approval

- name: Approve every event of this VM (all five types must be named)
  azure_maintenance.scheduled_events.scheduled_events_approve:
    event_types: [Freeze, Reboot, Redeploy, Preempt, Terminate]
  check_mode: true
  register: would_approve
'''

RETURN = r'''
changed:
  description: Whether an approval was sent (in check mode, whether one would be).
  returned: always
  type: bool
approved:
  description:
    - Ids of the events approved, spelled as the events document spells them.
    - In check mode, the ids that would be approved. Empty when the approval request failed.
  returned: always
  type: list
  elements: str
  sample: [C7061BAC-AFDC-4513-B24B-AA5F13A16123]
skipped_events:
  description:
    - Selected events that were not approved, and why.
    - Not named C(skipped), because Ansible reports any task whose result has a true C(skipped) as skipped, which
      would hide the approvals and the change of a task that also left some events alone.
  returned: always
  type: list
  elements: dict
  contains:
    event_id:
      description: The event id.
      type: str
      returned: always
    reason:
      description:
        - V(already_started) the event is C(Started) already.
        - V(foreign_vms) the event names VMs outside O(allowed_vms) (listed in RV(skipped_events[].foreign_vms)).
        - V(gone) the id is not in the events document (over, or cancelled).
        - V(not_leader) O(leader_only) is set and this VM is not first in C(Resources).
        - V(not_scheduled) the event has a status other than C(Scheduled) or C(Started), which IMDS may add one day;
          only C(Scheduled) events are approved.
        - V(not_this_vm) O(scope=this_vm) and this VM is not in C(Resources).
      type: str
      returned: always
    foreign_vms:
      description: The VMs of its C(Resources) that O(allowed_vms) does not allow.
      type: list
      elements: str
      returned: when reason is V(foreign_vms)
  sample: [{event_id: 6A1C3C64-8A53-4C4F-9E5C-4B1E4E1D0F3A, reason: not_leader}]
document_incarnation:
  description: C(DocumentIncarnation) of the last events document read, after approving and waiting.
  returned: always
  type: int
  sample: 3
events:
  description:
    - The events of the last document read, normalized (snake_case keys, C(not_before) as ISO 8601 UTC or V(null)).
  returned: always
  type: list
  elements: dict
  contains:
    event_id:
      description: C(EventId).
      type: str
      returned: always
    event_type:
      description: C(EventType) (V(Freeze), V(Reboot), V(Redeploy), V(Preempt) or V(Terminate)).
      type: str
      returned: always
    event_status:
      description: C(EventStatus) (V(Scheduled) or V(Started)).
      type: str
      returned: always
    resource_type:
      description: C(ResourceType).
      type: str
      returned: always
    resources:
      description: C(Resources), the names of the VMs affected.
      type: list
      elements: str
      returned: always
    not_before:
      description: C(NotBefore) as ISO 8601 UTC, V(null) when empty (the event has started) or unreadable.
      type: str
      returned: always
    not_before_raw:
      description: C(NotBefore) as IMDS sent it.
      type: str
      returned: always
    description:
      description: C(Description), V(null) before api-version 2019-04-01.
      type: str
      returned: always
    event_source:
      description: C(EventSource), V(null) before api-version 2019-08-01.
      type: str
      returned: always
    duration_in_seconds:
      description: C(DurationInSeconds), V(-1) when unknown, V(null) before api-version 2020-07-01.
      type: int
      returned: always
resource_name:
  description: The name of this VM as used in C(Resources).
  returned: always
  type: str
  sample: WestNO_0
resource_name_source:
  description: Where RV(resource_name) came from, V(option), V(imds) or V(hostname); with O(via=arm), V(option) or
    V(inventory).
  returned: always
  type: str
  sample: imds
waited:
  description: Seconds spent waiting for O(wait); V(0) when not waiting.
  returned: always
  type: float
  sample: 12.5
last_statuses:
  description:
    - For each followed event (approved, or selected and already C(Started)), its status in the last document
      read, V(gone) when absent.
  returned: always
  type: dict
  sample: {C7061BAC-AFDC-4513-B24B-AA5F13A16123: Started}
via:
  description: How the approval travelled, V(imds) or V(arm).
  returned: always
  type: str
  sample: imds
acknowledged_arm_ids:
  description: With O(via=arm), the ARM ids acknowledged, one per event.
  returned: when O(via=arm)
  type: list
  elements: str
list_requests:
  description: With O(via=arm), how many list-form requests acknowledged several events at once.
  returned: when O(via=arm)
  type: int
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_allowed_vms import keep_allowed
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_approval import (
    MISSING_CHOICES,
    OUTSIDE_ALLOWED_CHOICES,
    SCOPES,
    SKIP_NOT_LEADER,
    SKIP_NOT_THIS_VM,
    STATUS_GONE,
    WAIT_CHOICES,
    WAIT_NONE,
    drop_gone,
    describe_statuses,
    event_statuses,
    ids_to_follow,
    plan_approval,
    validate_selection,
    wait_condition,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_document import (
    EVENT_SOURCES,
    EVENT_TYPES,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import (
    ImdsHttpError,
    ScheduledEventsError,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_arm_options import (
    APPROVE_ARM_SUBOPTIONS,
    VIA_ARM,
    VIA_CHOICES,
    VIA_IMDS,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_identity import (
    SOURCE_HOSTNAME,
    resolve_resource_name,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_options import (
    argument_spec,
    client_from_options,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_wait import (
    DEFAULT_POLL_INTERVAL,
    WaitTimeoutError,
    poll_until,
    validate_poll_interval,
    validate_wait_timeout,
)

DEFAULT_WAIT_TIMEOUT = 1800.0


def module_argument_spec():
    """The common options plus this module's own."""
    return argument_spec(
        event_ids={'type': 'list', 'elements': 'str'},
        event_types={'type': 'list', 'elements': 'str', 'choices': list(EVENT_TYPES)},
        event_sources={'type': 'list', 'elements': 'str', 'choices': list(EVENT_SOURCES)},
        max_duration={'type': 'int'},
        scope={'type': 'str', 'choices': list(SCOPES), 'default': 'this_vm'},
        leader_only={'type': 'bool', 'default': False},
        allowed_vms={'type': 'list', 'elements': 'str'},
        missing={'type': 'str', 'choices': list(MISSING_CHOICES), 'default': 'fail'},
        outside_allowed={'type': 'str', 'choices': list(OUTSIDE_ALLOWED_CHOICES), 'default': 'fail'},
        wait={'type': 'str', 'choices': list(WAIT_CHOICES), 'default': WAIT_NONE},
        wait_timeout={'type': 'float', 'default': DEFAULT_WAIT_TIMEOUT},
        poll_interval={'type': 'float', 'default': DEFAULT_POLL_INTERVAL},
        via={'type': 'str', 'choices': list(VIA_CHOICES), 'default': VIA_IMDS},
        arm={'type': 'dict', 'options': APPROVE_ARM_SUBOPTIONS},
    )


class Approval(object):
    """One run of the module: reads, approves, waits, and keeps what the result must report."""

    def __init__(self, module, client, selection):
        self.module = module
        self.client = client
        self.selection = selection
        self.result = {'changed': False, 'approved': [], 'skipped_events': [], 'document_incarnation': None, 'events': [],
                       'resource_name': None, 'resource_name_source': None, 'waited': 0.0, 'last_statuses': {},
                       'via': VIA_IMDS}
        self.followed = []
        self.latest_document = None
        self.warned = set()

    def fail(self, message):
        self.module.fail_json(msg=message, **self.result)

    def record_document(self, normalized):
        for warning in normalized['warnings']:
            # The same document may be recorded more than once (before and after approving).
            if warning not in self.warned:
                self.warned.add(warning)
                self.module.warn(warning)
        self.result['document_incarnation'] = normalized['document_incarnation']
        self.result['events'] = normalized['events']
        self.result['last_statuses'] = event_statuses(normalized['events'], self.followed)

    def record_plan(self, plan, approved):
        """Keep the plan's outcome; ``approved`` says whether its ids were (or, in check mode, would be) approved."""
        self.result['approved'] = plan.approve_ids if approved else []
        self.result['skipped_events'] = plan.skipped
        self.followed = ids_to_follow(plan)

    def plan(self, normalized):
        planned = plan_approval(normalized['events'], self.result['resource_name'], self.selection,
                                document_incarnation=normalized['document_incarnation'])
        return self.within_allowed_vms(planned)

    def within_allowed_vms(self, plan):
        return keep_allowed(plan, self.module.params.get('allowed_vms'), self.selection.fails_outside_allowed, 'approved')

    def post(self, plan):
        """POST the plan's ids; return the plan actually approved (smaller if events vanished meanwhile)."""
        try:
            self.client.approve(plan.approve_ids)
            return plan
        except ImdsHttpError as exc:
            if exc.status != 400:
                raise
            refusal = exc
        # IMDS refuses the whole request when one id left the document
        # after it was read; anything else it refuses is a real error.
        normalized, dummy = self.client.get_document()
        self.latest_document = normalized
        narrowed = drop_gone(plan, normalized['events'])
        if len(narrowed.approve) == len(plan.approve):
            raise refusal
        self.module.warn('Event(s) %s left the events document before they could be approved; approving the others.'
                         % ', '.join(entry['event_id'] for entry in narrowed.skipped if entry not in plan.skipped))
        # The second request releases the events as this read shows them:
        # allowed_vms holds on it too.
        narrowed = self.within_allowed_vms(narrowed)
        if narrowed.approve:
            self.client.approve(narrowed.approve_ids)
        return narrowed

    def wait_for(self, wait, wait_timeout, poll_interval):
        ids = list(self.followed)
        seen_started = set()
        goal = wait_condition(wait, ids)

        def condition(document):
            for event_id, status in event_statuses(document['events'], ids).items():
                if status == 'Started':
                    seen_started.add(event_id)
            return goal(document)

        def describe(document):
            return describe_statuses(document, ids)

        try:
            normalized, dummy, waited, dummy_polls = poll_until(self.client, condition, wait_timeout,
                                                                poll_interval=poll_interval, describe=describe)
        except WaitTimeoutError as exc:
            if exc.last_document is not None:
                self.record_document(exc.last_document)
            self.result['waited'] = round(exc.waited or 0.0, 3)
            self.fail('Timed out waiting for the events to be %s: %s. Approved: %s.'
                      % (wait, exc.message, ', '.join(self.result['approved']) or 'nothing'))
        self.result['waited'] = round(waited, 3)
        self.record_document(normalized)
        vanished = [event_id for event_id in ids
                    if self.result['last_statuses'].get(event_id) == STATUS_GONE and event_id not in seen_started]
        if vanished:
            self.module.warn('Event(s) %s left the document without being seen Started: Azure cancelled them, or '
                             'they started and ended between two reads.' % ', '.join(vanished))

    def refuse_guessed_skips(self, plan, why):
        """Fail, before anything is sent, when a guessed VM name made events look like another VM's.

        With the host name standing in for the VM name (IMDS did not say),
        "not this VM" and "not the leader" may be wrong: the user's own event
        would wait silently for its NotBefore.
        """
        doubtful = [entry['event_id'] for entry in plan.skipped if entry['reason'] in (SKIP_NOT_THIS_VM, SKIP_NOT_LEADER)]
        if doubtful:
            self.fail('Nothing was approved: %s were left out as another VM\'s, but that rests on a guess. %s Run the '
                      'task again once IMDS answers, or set resource_name.' % (', '.join(doubtful), why))

    def run(self):
        params = self.module.params
        name, source, warning = resolve_resource_name(self.client, params['resource_name'])
        if warning:
            self.module.warn(warning)
        self.result['resource_name'] = name
        self.result['resource_name_source'] = source

        self.latest_document, dummy = self.client.get_document()
        self.record_document(self.latest_document)
        plan = self.plan(self.latest_document)
        if source == SOURCE_HOSTNAME:
            self.refuse_guessed_skips(plan, warning)
        self.record_plan(plan, approved=self.module.check_mode)
        if self.module.check_mode:
            self.result['changed'] = bool(plan.approve)
            self.record_document(self.latest_document)
            return self.result

        if plan.approve:
            plan = self.post(plan)
            self.record_plan(plan, approved=True)
            self.result['changed'] = bool(plan.approve)

        if params['wait'] != WAIT_NONE and self.followed:
            self.wait_for(params['wait'], params['wait_timeout'], params['poll_interval'])
            return self.result
        if self.result['changed']:
            # Report what IMDS shows after the approval, not before it. The
            # approval is done: a Reboot or Redeploy may take the VM down at
            # once, so a read that fails now must not turn it into a failure.
            try:
                self.latest_document, dummy = self.client.get_document()
            except ScheduledEventsError as exc:
                self.module.warn('The approval of %s was accepted; reading the events afterwards failed (the VM may '
                                 'be restarting already), so the events returned are those read before it: %s'
                                 % (', '.join(self.result['approved']), exc))
        self.record_document(self.latest_document)
        return self.result


def validated_selection(params):
    """The selection from the module's parameters; raises InvalidParameterError before any request."""
    validate_poll_interval(params['poll_interval'])
    validate_wait_timeout(params['wait_timeout'])
    return validate_selection(event_ids=params['event_ids'], event_types=params['event_types'],
                              event_sources=params['event_sources'], max_duration=params['max_duration'],
                              scope=params['scope'], leader_only=params['leader_only'], missing=params['missing'],
                              outside_allowed=params['outside_allowed'])


def run_module(module, make_client=None):
    """Approve as the parameters say and exit with the result; every core error becomes fail_json.

    ``make_client(params)`` builds the core client; the action plugin passes
    one whose requests run on a Windows target through win_uri.
    """
    make_client = make_client or client_from_options
    if module.params.get('via') == VIA_ARM:
        # The module runs on the managed node, which has no Azure credentials;
        # the action plugin of the same name approves through ARM instead.
        module.fail_json(msg='via=arm is carried out on the controller by the action plugin '
                             'azure_maintenance.scheduled_events.scheduled_events_approve, which this run did not use; '
                             'run the task by its full name from a playbook or ansible -m')
        return
    try:
        selection = validated_selection(module.params)
        client = make_client(module.params)
    except ScheduledEventsError as exc:
        module.fail_json(msg=exc.message)
        return

    approval = Approval(module, client, selection)
    try:
        approval.run()
    except ScheduledEventsError as exc:
        approval.fail(exc.message)
    finally:
        client.close()
    module.exit_json(**approval.result)


def main():
    module = AnsibleModule(argument_spec=module_argument_spec(), supports_check_mode=True)
    run_module(module)


if __name__ == '__main__':
    main()
