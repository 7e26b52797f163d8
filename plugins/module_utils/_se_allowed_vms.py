# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which VMs an approval may release (``allowed_vms``). Internal use only.

Approving an event releases it for every VM in its Resources. A caller that
knows which VMs are ready (drained) names them, and an event naming any other
VM is not approved: the guard holds at the moment of the request, even when
Azure added a VM to the event after the caller last looked. Shared by the
approve module (IMDS, and ARM for one VM) and the fleet approve module; kept
apart from the fleet plane's code so that it travels with the IMDS modules.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ._se_approval import ApprovalPlan
from ._se_errors import InvalidParameterError

SKIP_FOREIGN_VMS = 'foreign_vms'
# What skipped_events lists as the foreign VMs of an event whose Resources is empty.
EMPTY_RESOURCES = '(Resources is empty)'
# An event read from IMDS carries no subscription or resource group.
_NO_PLACE = ('none', 'none')

_ARM_VM_ID = re.compile(
    r'^/subscriptions/(?P<subscription_id>[^/]+)/resourcegroups/(?P<resource_group>[^/]+)/providers/'
    r'microsoft\.compute/virtualmachines/(?P<resource_name>[^/]+)/?$', re.IGNORECASE)


def parse_arm_vm_id(arm_id):
    """``{subscription_id, resource_group, resource_name}`` of a VM's ARM id, or None."""
    match = _ARM_VM_ID.match(str(arm_id or ''))
    return None if match is None else match.groupdict()


def _place_of(event):
    """The event's ``(subscription, resource group)``, lower case: where its Resources' names are VMs."""
    return (str(event.get('subscription_id')).lower(), str(event.get('resource_group')).lower())


def parse_allowed_vms(allowed_vms):
    """``(names, pinned)``, lower case: the bare VM names of ``allowed_vms``, and ``(subscription, resource group, name)`` of its ARM ids."""
    names, pinned = set(), set()
    for entry in allowed_vms:
        parts = parse_arm_vm_id(entry)
        if parts is None:
            names.add(str(entry).lower())
        else:
            pinned.add((parts['subscription_id'].lower(), parts['resource_group'].lower(),
                        parts['resource_name'].lower()))
    return names, pinned


def foreign_vms(event, allowed_vms, places=None):
    """The VMs of the event's Resources that ``allowed_vms`` does not allow (names compared without case).

    An entry of ``allowed_vms`` is a VM name, or a VM's ARM id, which allows
    that name only in its subscription and resource group (the event's; an
    event read from IMDS has none, and names only VMs of the reading VM's
    availability set or scale set, so there the id allows its name).
    ``places`` (from ``vm_places``) says where each name has events: a bare
    name found in several resource groups cannot tell which VM was meant, so
    it allows none of them. An event whose Resources is empty names no VM
    that could be checked: it is reported as ``['(Resources is empty)']``.
    """
    return foreign_vms_and_why(event, parse_allowed_vms(allowed_vms), places)[0]


def foreign_vms_and_why(event, allowed, places):
    """``(foreign_vms(...), why)`` with ``allowed`` from ``parse_allowed_vms``, so a plan parses it once.

    ``why`` is what the refusal of an event named by id says of it, None
    when every VM is allowed.
    """
    resources = event.get('resources') or []
    if not resources:
        return [EMPTY_RESOURCES], 'its Resources is empty'
    names, pinned = allowed
    where = _place_of(event)
    if where == _NO_PLACE:
        names = names | set(name for _subscription, _group, name in pinned)
    outside = []
    for name in resources:
        key = str(name).lower()
        if where + (key,) in pinned:
            continue
        if key in names and len((places or {}).get(key, (where,))) <= 1:
            continue
        outside.append(name)
    return outside, ('names ' + ', '.join(outside) if outside else None)


def vm_places(events):
    """``{VM name (lower case): set of (subscription, resource group)}`` over the Resources of ``events``."""
    places = {}
    for event in events:
        where = _place_of(event)
        for name in event.get('resources') or []:
            places.setdefault(str(name).lower(), set()).add(where)
    return places


def keep_allowed(plan, allowed_vms, fail, verb, places=None):
    """``plan`` without the events that name a VM outside ``allowed_vms`` (None: every VM is allowed).

    Such an event is skipped as ``foreign_vms``, or, when ``fail`` (the
    selection's ``fails_outside_allowed``: events named by id, unless the
    caller asked to skip them), the whole task fails (InvalidParameterError)
    before anything is sent. ``verb`` ("approved", "acknowledged") is what
    the message says was not done.
    """
    if allowed_vms is None:
        return plan
    allowed = parse_allowed_vms(allowed_vms)
    approve, skipped, refused = [], list(plan.skipped), []
    for event in plan.approve:
        outside, why = foreign_vms_and_why(event, allowed, places)
        if outside:
            skipped.append({'event_id': event['event_id'], 'reason': SKIP_FOREIGN_VMS, 'foreign_vms': outside})
            refused.append('%s (%s)' % (event['event_id'], why))
        else:
            approve.append(event)
    if refused and fail:
        raise InvalidParameterError(
            'event_ids name events that also affect VMs outside allowed_vms: %s. An event is released for every VM '
            'in its Resources at once, so nothing was %s; add those VMs to allowed_vms once they are ready (as ARM '
            'ids where one name has events in several resource groups), or leave the events out (outside_allowed: '
            'skip skips such events and goes on with the others).' % ('; '.join(refused), verb))
    return ApprovalPlan(approve, skipped)
