# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters behind playbooks/rolling_maintenance.yml: rolling_setup, rolling_host_status,
rolling_plan, rolling_describe, rolling_event_row, rolling_report.

Their documentation is in the .yml file named after each filter; the logic is
in plugin_utils/_rolling.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError

from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._rolling import (
    build_plan,
    build_report,
    build_setup,
    describe_entry,
    event_row,
    host_status,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._fleet import host_results


def _plain(value):
    """Ansible's lazy containers as plain dicts and lists, so the logic can copy and sort them."""
    if isinstance(value, Mapping):
        return dict((key, _plain(item)) for key, item in value.items())
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return [_plain(item) for item in value]
    return value


def _mapping(value, name, filter_name):
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise AnsibleFilterError('%s: %s must be a dictionary, got %s' % (filter_name, name, type(value).__name__))
    return _plain(value)


def rolling_setup(maintenance_groups, inventory_groups, play_hosts, group_settings=None, default_settings=None,
                  host_overrides=None, options=None, shipped_dir='', base_dir='.'):
    """Checked inputs and per-host settings of a rolling maintenance run."""
    return build_setup(_plain(maintenance_groups), _mapping(inventory_groups, 'inventory_groups', 'rolling_setup'),
                       _plain(play_hosts), group_settings=_plain(group_settings),
                       default_settings=_plain(default_settings),
                       host_overrides=_mapping(host_overrides, 'host_overrides', 'rolling_setup'),
                       options=_mapping(options, 'options', 'rolling_setup'), shipped_dir=shipped_dir,
                       base_dir=base_dir)


def rolling_plan(events, setup, resource_names, unavailable_hosts=None, stopped_groups=None, done_ids=None,
                 options=None, parked=None):
    """What to do with each merged event, in handling order."""
    if not isinstance(events, Sequence) or isinstance(events, (str, bytes)):
        raise AnsibleFilterError('rolling_plan expects the list returned by fleet_events, got %s'
                                 % type(events).__name__)
    setup = _mapping(setup, 'setup', 'rolling_plan')
    if 'groups' not in setup or 'hosts' not in setup:
        raise AnsibleFilterError('rolling_plan: setup must be the result of the rolling_setup filter')
    return build_plan(_plain(events), _mapping(resource_names, 'resource_names', 'rolling_plan'), setup,
                      unavailable_hosts=_plain(unavailable_hosts), stopped_groups=_plain(stopped_groups),
                      done_ids=_plain(done_ids), options=_mapping(options, 'options', 'rolling_plan'),
                      parked=_mapping(parked, 'parked', 'rolling_plan'))


def rolling_host_status(per_host, result_key, hosts):
    """Which hosts answered the query registered as ``result_key``, and their VM names."""
    hosts = _plain(hosts)
    return host_status(host_results(per_host, hosts=hosts, result_key=result_key), hosts)


def rolling_describe(entry):
    """One line about a rolling_plan entry."""
    return describe_entry(_mapping(entry, 'entry', 'rolling_describe'))


def rolling_event_row(event):
    """A table row about one event, for maintenance_overview.yml."""
    return event_row(_mapping(event, 'event', 'rolling_event_row'))


def rolling_report(records, run=None):
    """The report (run summary, events with their milestones, timeline bars) of a run."""
    return build_report(_mapping(records, 'records', 'rolling_report'), _mapping(run, 'run', 'rolling_report'))


class FilterModule(object):

    def filters(self):
        return {
            'rolling_setup': rolling_setup,
            'rolling_plan': rolling_plan,
            'rolling_host_status': rolling_host_status,
            'rolling_describe': rolling_describe,
            'rolling_event_row': rolling_event_row,
            'rolling_report': rolling_report,
        }
