#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: scheduled_events_info
short_description: Read the Azure Scheduled Events of the VM this task runs on
version_added: 0.1.0
description:
  - Reads the Azure Instance Metadata Service (IMDS) Scheduled Events document of the managed node, which must be an
    Azure VM (or reach the IMDS simulator through O(endpoint)), and tells which maintenance is coming and whether it
    affects this VM.
  - Every event is returned normalized, with what it means for this VM (O(resource_name)), that is whether this VM is among
    its C(Resources), which VM is its leader (the first entry of C(Resources), the usual choice of approver) and how
    many seconds are left before C(NotBefore).
  - Scheduled Events are delivered to every VM of an availability set or scale-set placement group, so the document
    holds events of other VMs too; RV(this_vm_events) and RV(maintenance_pending) only count this VM.
  - With O(wait_for), polls until a condition holds, for verification steps (an event appeared, this VM's events are
    over, the document changed).
  - Needs nothing on the managed node but Python; it never uses proxies and never follows redirects, as IMDS must be
    reached directly.
  - To read the events of the controller itself (AWX or a jump host on Azure), use the
    P(azure_maintenance.scheduled_events.scheduled_events#lookup) lookup.
author:
  - azure_maintenance.scheduled_events contributors (!UNKNOWN)
extends_documentation_fragment:
  - azure_maintenance.scheduled_events.common
  - azure_maintenance.scheduled_events.windows
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: The module only reads; it behaves the same in check mode.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
  action_group:
    description: Use C(group/azure_maintenance.scheduled_events.scheduled_events) in C(module_defaults) to set defaults.
    support: full
    membership:
      - azure_maintenance.scheduled_events.scheduled_events
options:
  event_types:
    description:
      - Only report events of these C(EventType)s (compared without case).
      - Known types are C(Freeze), C(Reboot), C(Redeploy), C(Preempt) and C(Terminate); other values are accepted with
        a warning, in case IMDS adds types.
      - The filters apply to RV(events), RV(this_vm_events), RV(maintenance_pending) and the O(wait_for) conditions;
        RV(raw) is always the whole document.
    type: list
    elements: str
  event_statuses:
    description:
      - Only report events with these C(EventStatus)es, C(Scheduled) or C(Started) (compared without case).
    type: list
    elements: str
  event_sources:
    description:
      - Only report events with these C(EventSource)s, C(Platform) or C(User) (compared without case).
      - api-versions before 2019-08-01 send no C(EventSource), so no event matches this filter then.
    type: list
    elements: str
  wait_for:
    description:
      - Poll until a condition holds, then return the document that satisfied it. Without it the document is read once.
      - V(any_event) waits for at least one (selected) event, for any VM.
      - V(this_vm_event) waits for a (selected) event affecting this VM.
      - V(no_this_vm_events) waits until no (selected) event affects this VM any more, for example after maintenance.
      - V(incarnation_change) waits until C(DocumentIncarnation) differs from O(since_incarnation), or from the first
        document read when O(since_incarnation) is not set.
      - On timeout the task fails with a message naming the last state seen.
    type: str
    choices: [any_event, this_vm_event, no_this_vm_events, incarnation_change]
  since_incarnation:
    description:
      - With O(wait_for=incarnation_change), the C(DocumentIncarnation) seen before, usually the
        RV(document_incarnation) of an earlier result.
      - Any different value counts as a change, including a smaller one, because the incarnation starts over when
        Azure re-enables Scheduled Events after 24 hours without requests.
    type: int
  wait_timeout:
    description:
      - How many seconds O(wait_for) may poll before the task fails.
    type: float
    default: 300
  poll_interval:
    description:
      - Seconds between two polls of O(wait_for). Azure recommends polling once per second.
      - IMDS throttles at about 5 requests per second for all clients of the VM together, so values under 0.25 are
        refused.
    type: float
    default: 1
notes:
  - The first request of a VM enables Scheduled Events and may take up to two minutes to be answered; the module waits
    for it (see O(timeout)) rather than failing.
  - HTTP 410, 429 and 5xx answers, connection failures and malformed documents are retried (see O(retries)); HTTP 400
    (for example a proxy that removed the C(Metadata) header) and 404 fail at once with a message saying what to do.
seealso:
  - plugin: azure_maintenance.scheduled_events.scheduled_events
    plugin_type: lookup
  - plugin: azure_maintenance.scheduled_events.fleet_events
    plugin_type: filter
  - name: Azure Scheduled Events for Linux VMs
    description: The Azure documentation of Scheduled Events.
    link: https://learn.microsoft.com/azure/virtual-machines/linux/scheduled-events
'''

EXAMPLES = r'''
- name: Read the maintenance coming for this VM
  azure_maintenance.scheduled_events.scheduled_events_info:
  register: maintenance

- name: Drain this node when maintenance affects it
  ansible.builtin.debug:
    msg: "Draining before {{ maintenance.this_vm_events | map(attribute='event_type') | join(', ') }}"
  when: maintenance.maintenance_pending

- name: Set the endpoint and api-version once for every module of the collection
  module_defaults:
    group/azure_maintenance.scheduled_events.scheduled_events:
      endpoint: http://127.0.0.1:18101/metadata/scheduledevents
      api_version: '2019-08-01'
  block:
    - name: Only Reboots and Redeploys the platform scheduled
      azure_maintenance.scheduled_events.scheduled_events_info:
        event_types: [Reboot, Redeploy]
        event_sources: [Platform]
      register: disruptive

- name: The VM name in Resources is not the host name here, so say it
  azure_maintenance.scheduled_events.scheduled_events_info:
    resource_name: myScaleSet_3
  register: maintenance

- name: After approving, wait until this VM's events are over
  azure_maintenance.scheduled_events.scheduled_events_info:
    wait_for: no_this_vm_events
    wait_timeout: 900
  register: after

- name: Wait until the document changes from the one read before
  azure_maintenance.scheduled_events.scheduled_events_info:
    wait_for: incarnation_change
    since_incarnation: "{{ maintenance.document_incarnation }}"
    wait_timeout: 60
'''

RETURN = r'''
document_incarnation:
  description:
    - The C(DocumentIncarnation) of the document. It changes whenever the events change; two documents with the
      same incarnation hold the same events.
    - On a O(wait_for) timeout, that of the last document seen.
  returned: success, and on O(wait_for) timeout when a document was read
  type: int
  sample: 2
resource_name:
  description: The name of this VM in the C(Resources) of events.
  returned: success, and on O(wait_for) timeout when a document was read
  type: str
  sample: WestNO_0
resource_name_source:
  description:
    - Where RV(resource_name) came from, V(option) (set by O(resource_name)), V(imds) (the instance metadata) or
      V(hostname) (the fallback when the instance metadata could not be read; a warning then says why).
  returned: success
  type: str
  sample: imds
events:
  description:
    - The events of the document that pass the event filters, in document order, for every VM of the set or group.
    - Keys are the normalized names of every plugin of this collection. Fields the O(api_version) does not send are
      V(null).
  returned: success, and on O(wait_for) timeout when a document was read
  type: list
  elements: dict
  contains:
    event_id:
      description: C(EventId), the id to approve.
      type: str
      sample: C7061BAC-AFDC-4513-B24B-AA5F13A16123
    event_type:
      description: C(EventType), V(Freeze), V(Reboot), V(Redeploy), V(Preempt) or V(Terminate).
      type: str
      sample: Freeze
    event_status:
      description: C(EventStatus), V(Scheduled) or V(Started). Events that are over disappear instead.
      type: str
      sample: Scheduled
    event_source:
      description: C(EventSource), V(Platform) or V(User); V(null) before api-version 2019-08-01.
      type: str
      sample: Platform
    resource_type:
      description: C(ResourceType).
      type: str
      sample: VirtualMachine
    resources:
      description: C(Resources), the VMs affected, by the names IMDS knows them by.
      type: list
      elements: str
      sample: [WestNO_0, WestNO_1]
    not_before:
      description:
        - C(NotBefore) in UTC as C(YYYY-MM-DDTHH:MM:SSZ); V(null) once the event has Started (IMDS then sends an
          empty string) or when it could not be read (a warning says so).
      type: str
      sample: '2022-04-11T22:26:58Z'
    not_before_raw:
      description: C(NotBefore) exactly as IMDS sent it.
      type: str
      sample: Mon, 11 Apr 2022 22:26:58 GMT
    description:
      description: C(Description); V(null) before api-version 2019-04-01.
      type: str
      sample: Virtual machine is being paused because of a memory-preserving Live Migration operation.
    duration_in_seconds:
      description: C(DurationInSeconds), V(-1) when the platform does not know; V(null) before api-version 2020-07-01.
      type: int
      sample: 5
    affects_this_vm:
      description: Whether RV(resource_name) is in C(Resources) (compared without case).
      type: bool
      sample: true
    leader:
      description: The first entry of C(Resources), the VM a fleet usually lets approve the event; V(null) if empty.
      type: str
      sample: WestNO_0
    is_leader:
      description: Whether this VM is the RV(events[].leader).
      type: bool
      sample: true
    seconds_until_not_before:
      description: Whole seconds from now until C(NotBefore), negative once passed; V(null) when there is none.
      type: int
      sample: 897
this_vm_events:
  description: The RV(events) that affect this VM (RV(events[].affects_this_vm) true), same keys.
  returned: success, and on O(wait_for) timeout when a document was read
  type: list
  elements: dict
  sample: []
maintenance_pending:
  description: Whether any Scheduled or Started event among RV(events) affects this VM.
  returned: success, and on O(wait_for) timeout when a document was read
  type: bool
  sample: false
raw:
  description: The document exactly as IMDS returned it, before any filter.
  returned: success
  type: dict
  sample: {"DocumentIncarnation": 1, "Events": []}
waited:
  description: Seconds spent polling for O(wait_for).
  returned: when O(wait_for) is set
  type: float
  sample: 12.3
polls:
  description: How many times the document was read for O(wait_for).
  returned: when O(wait_for) is set
  type: int
  sample: 13
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import ScheduledEventsError
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_info import (
    EVENT_SELECTION_ARGUMENT_SPEC,
    WAIT_ARGUMENT_SPEC,
    EventSelection,
    InfoWaitTimeoutError,
    fetch_info,
    module_result,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_options import (
    argument_spec,
    client_from_options,
)


def module_argument_spec():
    """The common options plus the event filters and the wait options."""
    own_options = dict(EVENT_SELECTION_ARGUMENT_SPEC)
    own_options.update(WAIT_ARGUMENT_SPEC)
    return argument_spec(**own_options)


def run_module(module, make_client=None):
    """Read (or wait for) the document and exit with the result; every core error becomes fail_json.

    ``make_client(params)`` builds the core client; the action plugin passes
    one whose requests run on a Windows target through win_uri.
    """
    make_client = make_client or client_from_options
    params = module.params
    selection = EventSelection.from_options(params)
    client = None
    try:
        client = make_client(params)
        info = fetch_info(client, resource_name=params['resource_name'], selection=selection,
                          wait_for=params['wait_for'], since_incarnation=params['since_incarnation'],
                          wait_timeout=params['wait_timeout'], poll_interval=params['poll_interval'])
    except InfoWaitTimeoutError as exc:
        last_state = module_result(exc.last_view, None) if exc.last_view is not None else {}
        module.fail_json(msg=exc.message, **last_state)
    except ScheduledEventsError as exc:
        module.fail_json(msg=exc.message)
    finally:
        if client is not None:
            client.close()
    for warning in info.warnings:
        module.warn(warning)
    result = module_result(info.view, info.raw)
    result['resource_name_source'] = info.resource_name_source
    if params['wait_for']:
        result['waited'] = round(info.waited, 3)
        result['polls'] = info.polls
    module.exit_json(changed=False, **result)


def main():
    module = AnsibleModule(argument_spec=module_argument_spec(), supports_check_mode=True)
    run_module(module)


if __name__ == '__main__':
    main()
