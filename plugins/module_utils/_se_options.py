# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The options every plugin shares, defined once. Internal use only.

Modules build their argument_spec from COMMON_ARGUMENT_SPEC; the lookup reads
the same names through get_option; the daemon and the EDA source pass their
configuration dicts. All of them get their client from client_from_options,
so an option means the same everywhere. The documentation of these options is
the doc fragment ``azure_maintenance.scheduled_events.common``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ._se_client import DEFAULT_DEADLINE, DEFAULT_ENDPOINT, DEFAULT_RETRIES, DEFAULT_TIMEOUT, ImdsClient
from ._se_document import DEFAULT_API_VERSION

COMMON_ARGUMENT_SPEC = {
    'endpoint': {'type': 'str', 'default': DEFAULT_ENDPOINT},
    'api_version': {'type': 'str', 'default': DEFAULT_API_VERSION},
    'timeout': {'type': 'float', 'default': DEFAULT_TIMEOUT},
    'retries': {'type': 'int', 'default': DEFAULT_RETRIES},
    'deadline': {'type': 'float', 'default': DEFAULT_DEADLINE},
    'resource_name': {'type': 'str'},
}

EVENT_FILTER_ARGUMENT_SPEC = {
    'event_types': {'type': 'list', 'elements': 'str'},
    'event_sources': {'type': 'list', 'elements': 'str'},
}


def argument_spec(**own_options):
    """A module's argument_spec: the common options plus ``own_options``."""
    spec = copy.deepcopy(COMMON_ARGUMENT_SPEC)
    spec.update(own_options)
    return spec


def client_from_options(options, **client_kwargs):
    """An ImdsClient configured from a mapping holding the common options.

    Missing or None values take the documented defaults.
    """
    def pick(name):
        value = options.get(name)
        return COMMON_ARGUMENT_SPEC[name].get('default') if value is None else value

    # ImdsClient checks and converts the numbers, with messages naming the option.
    return ImdsClient(endpoint=pick('endpoint'), api_version=pick('api_version'),
                      timeout=pick('timeout'), retries=pick('retries'), deadline=pick('deadline'), **client_kwargs)
