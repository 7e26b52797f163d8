# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fleet plane's options and choices, without the code that calls Azure. Internal use only.

Apart from ``_se_arm`` and ``_se_graph`` so that a module that only declares
these options runs without them: scheduled_events_approve holds them in its
``arm`` option, and Ansible ships every module_utils file a module imports
to each managed node, where an IMDS approval never needs the ARM client.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# Azure clouds: (Resource Manager endpoint, Entra ID authority).
CLOUDS = {
    'AzureCloud': ('https://management.azure.com', 'https://login.microsoftonline.com'),
    'AzureChinaCloud': ('https://management.chinacloudapi.cn', 'https://login.chinacloudapi.cn'),
    'AzureUSGovernment': ('https://management.usgovcloudapi.net', 'https://login.microsoftonline.us'),
}
AUTH_SOURCES = ('auto', 'cli', 'env', 'msi')
DEFAULT_TIMEOUT = 120.0

# Options shared by the fleet modules; documented once in the doc fragment
# azure_maintenance.scheduled_events.azure_arm. Names follow azure.azcollection
# where they mean the same thing.
ARM_ARGUMENT_SPEC = {
    'auth_source': {'type': 'str', 'default': 'auto', 'choices': list(AUTH_SOURCES)},
    'client_id': {'type': 'str'},
    'secret': {'type': 'str', 'no_log': True},
    'tenant': {'type': 'str'},
    'cloud_environment': {'type': 'str', 'default': 'AzureCloud', 'choices': sorted(CLOUDS)},
    'management_endpoint': {'type': 'str'},
    'bearer_token': {'type': 'str', 'no_log': True},
    'timeout': {'type': 'float', 'default': DEFAULT_TIMEOUT},
}

MAX_PAGE_SIZE = 1000

# The options choosing what the fleet modules read; documented in each module.
FLEET_SCOPE_ARGUMENT_SPEC = {
    'subscriptions': {'type': 'list', 'elements': 'str', 'aliases': ['subscription_ids']},
    'resource_groups': {'type': 'list', 'elements': 'str'},
    'resource_names': {'type': 'list', 'elements': 'str'},
    'vm_names': {'type': 'list', 'elements': 'str'},
    'event_ids': {'type': 'list', 'elements': 'str'},
    'event_types': {'type': 'list', 'elements': 'str'},
    'event_statuses': {'type': 'list', 'elements': 'str'},
    'event_sources': {'type': 'list', 'elements': 'str'},
    'page_size': {'type': 'int', 'default': MAX_PAGE_SIZE},
}

# How scheduled_events_approve sends its approval: to this VM's IMDS, or
# through the ARM acknowledge API from the controller.
VIA_IMDS = 'imds'
VIA_ARM = 'arm'
VIA_CHOICES = (VIA_IMDS, VIA_ARM)
LIST_FORM_SPEC = {'type': 'bool', 'default': True}
# The suboptions of scheduled_events_approve's ``arm`` option: the ARM options
# of the fleet modules, the scope of the Resource Graph read and list_form.
APPROVE_ARM_SUBOPTIONS = dict(ARM_ARGUMENT_SPEC, list_form=LIST_FORM_SPEC,
                              **dict((name, FLEET_SCOPE_ARGUMENT_SPEC[name])
                                     for name in ('subscriptions', 'resource_groups', 'page_size')))
