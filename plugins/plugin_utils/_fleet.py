# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Merging the scheduled_events_info results of many hosts. Internal use only.

Every VM of an availability set or placement group is told about every event
of the group, so N hosts report the same event N times. A fleet view needs
each event once, with the inventory hosts it affects. Events name VMs as IMDS
knows them (``Resources``), which are often not inventory names: the mapping
goes through the ``resource_name`` each host reported, never through
``inventory_hostname``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_graph import status_rank
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_select import (
    event_id_key,
    leader_of,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._filter_input import resources_of

FILTER_NAME = 'fleet_events'

# Annotations that only hold for the host that read the event (or the moment
# it read it); the fleet view replaces them with host lists.
_PER_HOST_KEYS = ('affects_this_vm', 'is_leader', 'seconds_until_not_before')
# Fields an older api-version leaves out, which another host's copy may have.
_FILLABLE_KEYS = ('event_source', 'description', 'duration_in_seconds', 'resource_type')


def _usable_result(host, result):
    """The result of ``host``, or None when the host has nothing to contribute."""
    if result is None:
        return None
    if not isinstance(result, Mapping):
        raise AnsibleFilterError('%s: the result for host %s is %s, not a registered scheduled_events_info result'
                                 % (FILTER_NAME, host, type(result).__name__))
    if result.get('failed') or result.get('skipped') or result.get('unreachable'):
        return None
    missing = [key for key in ('resource_name', 'events') if key not in result]
    if missing and 'failed_when_result' in result:
        # A read that failed, kept in the play by the task's failed_when.
        return None
    if missing:
        raise AnsibleFilterError('%s: the result for host %s has no %s; pass the registered result of '
                                 'azure_maintenance.scheduled_events.scheduled_events_info (or use result_key to pick '
                                 'it from hostvars)' % (FILTER_NAME, host, ' or '.join(missing)))
    if not isinstance(result['events'], Sequence) or isinstance(result['events'], (str, bytes)):
        raise AnsibleFilterError('%s: events of host %s is %s, expected a list'
                                 % (FILTER_NAME, host, type(result['events']).__name__))
    return result


def host_results(per_host, hosts=None, result_key=None):
    """``[(inventory_hostname, result), ...]`` of the hosts that have a usable result.

    ``per_host`` maps inventory host names to their result, or with
    ``result_key`` to their variables (``hostvars``) holding the result under
    that key. ``hosts`` restricts and orders the hosts considered (for example
    ``ansible_play_hosts``); by default every key of ``per_host`` in order.
    Failed, skipped and unreachable results are left out, as are failed
    reads whose task said ``failed_when: false``.
    """
    if not isinstance(per_host, Mapping):
        raise AnsibleFilterError('%s expects a dictionary of inventory host name to result (or hostvars with '
                                 'result_key), got %s' % (FILTER_NAME, type(per_host).__name__))
    if hosts is None:
        hosts = list(per_host)
    elif isinstance(hosts, str) or not isinstance(hosts, Sequence):
        raise AnsibleFilterError('%s: hosts must be a list of inventory host names, got %s'
                                 % (FILTER_NAME, type(hosts).__name__))
    pairs = []
    for host in hosts:
        if host not in per_host:
            continue
        value = per_host[host]
        if result_key is not None:
            if not isinstance(value, Mapping):
                raise AnsibleFilterError('%s: with result_key, the input must be hostvars (host name to variables); '
                                         'the value for %s is %s' % (FILTER_NAME, host, type(value).__name__))
            value = value.get(result_key)
        result = _usable_result(host, value)
        if result is not None:
            pairs.append((str(host), result))
    return pairs


def _event_key(event):
    key = event_id_key(event.get('event_id'))
    if key:
        return key
    # Without an id the content is the only identity there is: what does not
    # change while it runs (NotBefore empties once it has Started).
    return json.dumps(dict((name, event.get(name)) for name in ('event_type', 'resources')), sort_keys=True,
                      default=str)


def _further_along(candidate, current):
    return status_rank(candidate) > status_rank(current)


def _filled(event, other):
    """``event``, its missing fields taken from ``other`` (another host's copy of the same event).

    Hosts may read with different api-versions: an older one gives no
    EventSource, Description or DurationInSeconds, which a newer one has.
    """
    missing = [key for key in _FILLABLE_KEYS if event.get(key) is None and other.get(key) is not None]
    if not missing:
        return event
    filled = dict(event)
    for key in missing:
        filled[key] = other[key]
    return filled


def _append_once(items, item):
    if item not in items:
        items.append(item)


def merge_fleet_events(pairs):
    """De-duplicate the events of ``pairs`` (from host_results) across hosts.

    Returns one dict per distinct event (matched by id without case), in
    first-seen order: the event's normalized keys plus ``leader``, ``hosts``
    (inventory hosts whose resource_name is in Resources, in Resources order),
    ``leader_host`` (the inventory host of the leader, or None), ``seen_by``
    (hosts whose document holds the event) and ``unmatched_resources``
    (Resources that no host reported as its resource_name).
    """
    hosts_by_name = {}
    for host, result in pairs:
        name = result.get('resource_name')
        if name:
            _append_once(hosts_by_name.setdefault(str(name).lower(), []), host)
    merged = {}
    order = []
    for host, result in pairs:
        for event in result['events']:
            if not isinstance(event, Mapping):
                raise AnsibleFilterError('%s: an event of host %s is %s, not a dictionary'
                                         % (FILTER_NAME, host, type(event).__name__))
            key = _event_key(event)
            entry = merged.get(key)
            if entry is None:
                merged[key] = {'event': event, 'seen_by': [host]}
                order.append(key)
                continue
            _append_once(entry['seen_by'], host)
            if _further_along(event, entry['event']):
                entry['event'] = _filled(event, entry['event'])
            else:
                entry['event'] = _filled(entry['event'], event)
    return [_fleet_event(merged[key]['event'], merged[key]['seen_by'], hosts_by_name) for key in order]


def _hosts_named(name, hosts_by_name, seen_by):
    """The hosts whose VM is ``name``.

    VM names are unique within a resource group only: when several hosts
    report the same name, the ones whose IMDS holds the event are the VM it
    names (a VM always sees its own events), if any of them does.
    """
    matched = hosts_by_name.get(name.lower()) or []
    if len(matched) > 1:
        seen = [host for host in matched if host in seen_by]
        if seen:
            return seen
    return matched


def _fleet_event(event, seen_by, hosts_by_name):
    fleet_event = dict((key, value) for key, value in event.items() if key not in _PER_HOST_KEYS)
    resources = resources_of(event)
    fleet_event['resources'] = resources
    leader = leader_of({'resources': resources})
    fleet_event['leader'] = leader
    hosts, unmatched = [], []
    for name in resources:
        matched = _hosts_named(name, hosts_by_name, seen_by)
        if matched:
            for host in matched:
                _append_once(hosts, host)
        else:
            unmatched.append(name)
    leader_hosts = _hosts_named(leader, hosts_by_name, seen_by) if leader else []
    fleet_event['hosts'] = hosts
    fleet_event['leader_host'] = leader_hosts[0] if leader_hosts else None
    fleet_event['seen_by'] = list(seen_by)
    fleet_event['unmatched_resources'] = unmatched
    return fleet_event
