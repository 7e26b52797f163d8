# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters over Scheduled Events: affecting, leader_of and fleet_events.

Their documentation is in the .yml file named after each filter.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_select import same_resource
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._filter_input import (
    event_of,
    events_of,
    resources_of,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._fleet import (
    host_results,
    merge_fleet_events,
)


def affecting(events, resource_name):
    """The events whose Resources include ``resource_name`` (compared without case)."""
    if not isinstance(resource_name, str) or not resource_name:
        raise AnsibleFilterError('affecting needs a VM name as it appears in Resources (for example the '
                                 'resource_name of a scheduled_events_info result), got %r' % (resource_name,))
    return [event for event in events_of(events, 'affecting')
            if any(same_resource(name, resource_name) for name in resources_of(event))]


def leader_of(event):
    """The event's leader: the first VM of its Resources, or None when Resources is empty."""
    resources = resources_of(event_of(event, 'leader_of'))
    return resources[0] if resources else None


def fleet_events(per_host, result_key=None, hosts=None):
    """One entry per distinct event across hosts, with the inventory hosts it affects."""
    return merge_fleet_events(host_results(per_host, hosts=hosts, result_key=result_key))


class FilterModule(object):

    def filters(self):
        return {
            'affecting': affecting,
            'leader_of': leader_of,
            'fleet_events': fleet_events,
        }
