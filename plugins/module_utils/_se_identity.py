# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which VM am I, in the names Scheduled Events use? Internal use only.

Events list affected VMs by the name IMDS knows them by (``myScaleSet_3`` for
a scale-set instance), which is often not the host name and rarely the
inventory name. The instance endpoint on the same origin as the events
endpoint tells the VM its own name.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import socket

from ._se_errors import MalformedDocumentError, ScheduledEventsError

COMPUTE_API_VERSION = '2021-02-01'
COMPUTE_PATH = '/metadata/instance/compute?api-version=' + COMPUTE_API_VERSION

SOURCE_OPTION = 'option'
SOURCE_IMDS = 'imds'
SOURCE_HOSTNAME = 'hostname'


def get_compute(client, deadline=None):
    """The VM's compute metadata (a dict: name, vmScaleSetName, platformUpdateDomain, ...)."""
    compute = client.get_json(COMPUTE_PATH, deadline=deadline)
    if not isinstance(compute, dict):
        raise MalformedDocumentError('instance compute metadata is not a JSON object')
    return compute


def resource_name_from_compute(compute):
    """The name Scheduled Events use for this VM, from its compute metadata."""
    name = compute.get('name') if isinstance(compute, dict) else None
    if not isinstance(name, str) or not name:
        raise MalformedDocumentError('instance compute metadata has no name field')
    return name


def fallback_resource_name():
    """The short host name: Azure names a VM's host after the VM unless told otherwise."""
    return socket.gethostname().split('.')[0]


def _sender_host_name(client):
    """The host name of the machine the requests leave from, when a transport says it is not this one.

    The Windows path runs the core on the controller and sends each request
    from the target (see plugin_utils/_remote_http.py): the fallback must be
    the target's name then, not the controller's.
    """
    sender = getattr(getattr(client, 'transport', None), 'sender_host_name', None)
    name = sender() if callable(sender) else None
    return name.split('.')[0] if name else None


def resolve_resource_name(client, override=None, deadline=None):
    """Return ``(resource_name, source, warning)``.

    An explicit ``override`` wins. Otherwise the name comes from IMDS; when
    that fails the short host name is used and ``warning`` says why, because a
    wrong name makes every event look as if it affected other VMs.
    """
    if override:
        return override, SOURCE_OPTION, None
    try:
        return resource_name_from_compute(get_compute(client, deadline=deadline)), SOURCE_IMDS, None
    except ScheduledEventsError as exc:
        name = _sender_host_name(client) or fallback_resource_name()
        warning = ('Could not learn this VM\'s name from IMDS (%s); using the host name %r instead. '
                   'Set resource_name to the VM name Azure uses in Resources if that is wrong.' % (exc.message, name))
        return name, SOURCE_HOSTNAME, warning
