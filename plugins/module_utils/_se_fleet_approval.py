# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which Resource Graph events to acknowledge through ARM, and when that took effect. Internal use only.

The IMDS approval rules of ``_se_approval`` (explicit selection, ids checked
first, ``missing``, no second approval of a Started event) apply unchanged;
this adds what a controller acting for a whole fleet must also hold to:

- ``vm_names``: with filters, only events naming one of these VMs are
  considered (the fleet's counterpart of ``scope: this_vm``);
- ``allowed_vms``: an event naming any VM outside this set is never
  acknowledged, because acknowledging releases it for every VM it names;
- events already over (Completed, Canceled, statuses only ARM shows) are
  skipped, so running the task again changes nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ._se_allowed_vms import keep_allowed, vm_places
from ._se_approval import SCOPE_ALL, SKIP_GONE, SKIP_NOT_SCHEDULED, ApprovalPlan, plan_approval
from ._se_errors import InvalidParameterError
from ._se_select import affects, event_id_key

SKIP_FINISHED = 'finished'
# What an event missing from Resource Graph is reported as.
STATUS_GONE = 'gone'
FINISHED = ('completed', 'canceled')
WAIT_STARTED = 'started'
WAIT_COMPLETED = 'completed'


def fleet_missing_ids_message(missing_ids, dummy_incarnation=None):
    """The failure message for ids Resource Graph did not return.

    Unlike IMDS, Resource Graph keeps a finished event (Completed, Canceled),
    so an id it does not list is seldom over: the read did not reach it.
    """
    return ('event_ids %s are not among the events Resource Graph returned, so nothing was acknowledged. It lists '
            'finished events too (Completed, Canceled), so check: the ids; subscriptions and resource_groups (do '
            'they hold the VM?); that the VM, availability set or scale set publishes its events '
            '(scheduledEventsPolicy, eventGridAndResourceGraph enabled); and that the identity may read them (the '
            'ScheduledEventContributor role). Or set missing: ignore to skip such ids with reason %r.'
            % (', '.join(missing_ids), SKIP_GONE))


def plan_fleet_approval(events, selection, vm_names=None, allowed_vms=None, resource_name=None):
    """An ApprovalPlan over fleet events (see ``_se_graph.normalize_rows``).

    ``selection`` comes from ``_se_approval.validate_selection``. A fleet
    approval has no "this VM" and uses scope ``all``; an approval made for
    one host's VM through ARM (``scheduled_events_approve`` with ``via:
    arm``) passes that VM as ``resource_name``, and then the selection's
    ``scope`` and ``leader_only`` rules hold exactly as over IMDS. With event
    ids, an event naming VMs outside ``allowed_vms`` fails the whole task
    (InvalidParameterError) before anything is acknowledged: the user named
    it, so silence would hide a mistake; with filters, or with ids and the
    selection's ``outside_allowed`` set to ``skip``, it is skipped as
    ``foreign_vms``.
    """
    if resource_name is None and (selection.scope != SCOPE_ALL or selection.leader_only):
        raise InvalidParameterError('a fleet approval has no "this VM": build the selection with scope all, or '
                                    'give the VM it is made for')
    places = vm_places(events)
    if selection.uses_filters and vm_names:
        events = [event for event in events if any(affects(event, name) for name in vm_names)]
    plan = plan_approval(events, resource_name, selection, missing_message=fleet_missing_ids_message)
    status_of = dict((event_id_key(event.get('event_id')), str(event.get('event_status')).lower()) for event in events)
    skipped = []
    for entry in plan.skipped:
        # The IMDS rules call every status but Scheduled "not scheduled"; ARM
        # says more: the event is over (Completed) or will not happen (Canceled).
        if entry['reason'] == SKIP_NOT_SCHEDULED and status_of.get(event_id_key(entry['event_id'])) in FINISHED:
            entry = dict(entry, reason=SKIP_FINISHED)
        skipped.append(entry)
    return keep_allowed(ApprovalPlan(plan.approve, skipped), allowed_vms, selection.fails_outside_allowed, 'acknowledged',
                        places)


def fleet_statuses(events, event_ids):
    """``{event_id: status}`` as Resource Graph shows each now, ``gone`` when it has no row any more."""
    by_key = dict((str(event.get('event_id')).lower().strip('{}'), event) for event in events)
    return dict((event_id, (by_key.get(event_id.lower().strip('{}')) or {}).get('event_status', STATUS_GONE))
                for event_id in event_ids)


def fleet_wait_satisfied(wait, statuses):
    """True when every followed event reached the ``wait`` goal (``none`` always holds).

    ``started``: Started, or already past it (Completed, Canceled, gone).
    ``completed``: Completed, Canceled or gone; unlike IMDS, ARM says so.
    """
    if wait == WAIT_STARTED:
        return all(str(status).lower() in ('started', STATUS_GONE) + FINISHED for status in statuses.values())
    if wait == WAIT_COMPLETED:
        return all(str(status).lower() in (STATUS_GONE,) + FINISHED for status in statuses.values())
    return True


ACK_API_VERSION = '2023-10-01-preview'
# The list form is newer (Azure SDKs call it AcknowledgeList): several events of one resource per request.
ACK_LIST_API_VERSION = '2025-10-01-preview'
_EVENTS_SEGMENT = '/providers/microsoft.maintenance/scheduledevents/'


def ack_path(arm_id):
    """The acknowledge path of an event's ARM id."""
    return arm_id.rstrip('/') + '/acknowledge'


def owner_of(arm_id):
    """The ARM id of the VM or scale set that owns the event ``arm_id``."""
    index = str(arm_id).lower().rfind(_EVENTS_SEGMENT)
    if index < 0:
        raise InvalidParameterError('%r is not the ARM id of a scheduled event' % (arm_id,))
    return arm_id[:index]


def ack_list_path(owner):
    """The path of the list form for the events of ``owner`` (body ``{"value": [EventId, ...]}``)."""
    return owner.rstrip('/') + '/providers/Microsoft.Maintenance/scheduledevents'


def ack_batches(events):
    """``[(owner, [events])]``: the events grouped by the resource owning their first ARM id, in order.

    One acknowledgement per event is enough even when several resources own
    it (the VMs of an availability set): it releases the event for all.
    """
    batches, by_owner = [], {}
    for event in events:
        owner = owner_of(event['arm_id'])
        key = owner.lower()
        if key not in by_owner:
            by_owner[key] = (owner, [])
            batches.append(by_owner[key])
        by_owner[key][1].append(event)
    return batches
