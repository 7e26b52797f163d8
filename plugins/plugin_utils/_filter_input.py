# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading what users pipe into the event filters. Internal use only.

Filters get data from many places: a registered scheduled_events_info result,
its ``events`` or ``this_vm_events``, the lookup, or an untouched IMDS
document (``raw``). They accept all of them, and say clearly what they expected
when given something else, because a filter error is read in the middle of a
template.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError


def _is_list(value):
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def events_of(value, filter_name):
    """The list of events in ``value``.

    ``value`` may be a list of events, a scheduled_events_info result or
    normalized document (with ``events``), or a raw IMDS document (with
    ``Events``).
    """
    if isinstance(value, Mapping):
        if 'events' in value:
            value = value['events']
        elif 'Events' in value:
            value = value['Events']
        else:
            raise AnsibleFilterError('%s expects a list of events, a scheduled_events_info result or an IMDS document; '
                                     'got a dictionary without events (keys: %s)'
                                     % (filter_name, ', '.join(sorted(str(key) for key in value)) or 'none'))
    if value is None:
        return []
    if not _is_list(value):
        raise AnsibleFilterError('%s expects a list of events, got %s' % (filter_name, type(value).__name__))
    for position, event in enumerate(value):
        if not isinstance(event, Mapping):
            raise AnsibleFilterError('%s expects events to be dictionaries; item %d is %s'
                                     % (filter_name, position, type(event).__name__))
    return list(value)


def resources_of(event):
    """The Resources of a normalized (``resources``) or raw IMDS (``Resources``) event, as a list of str.

    In a raw event, a leading underscore is dropped: api-version 2017-03-01
    put one before every name, and no Azure VM name begins with one (the
    normalized view has it dropped already).
    """
    resources = event.get('resources')
    raw = resources is None
    if raw:
        resources = event.get('Resources')
    if resources is None:
        return []
    if isinstance(resources, str):
        resources = [resources]
    names = [str(name) for name in resources if name is not None]
    return [name[1:] if raw and name.startswith('_') else name for name in names]


def event_of(value, filter_name):
    """``value`` as one event; a list gets a message pointing to ``map``."""
    if isinstance(value, Mapping):
        return value
    if _is_list(value):
        raise AnsibleFilterError("%s expects one event, got a list; for a list use map('azure_maintenance."
                                 "scheduled_events.%s')" % (filter_name, filter_name))
    raise AnsibleFilterError('%s expects an event (a dictionary), got %s' % (filter_name, type(value).__name__))
