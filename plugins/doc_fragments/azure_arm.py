# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The Azure Resource Manager options of the fleet-plane modules (Resource
    # Graph read, ARM acknowledge). Names follow azure.azcollection where they
    # mean the same thing.

    DOCUMENTATION = r'''
options:
  auth_source:
    description:
      - How to get an Azure token when O(bearer_token) is not given. Needs the Python package C(azure-identity) where
        the task runs (usually the controller).
      - V(auto) uses azure-identity's default chain (environment variables, workload identity, managed identity,
        Azure CLI, ...); with O(client_id), O(secret) and O(tenant), a service principal instead.
      - V(cli) uses the Azure CLI login (C(az login)), V(env) the C(AZURE_CLIENT_ID), C(AZURE_TENANT_ID),
        C(AZURE_CLIENT_SECRET) (or certificate) variables, V(msi) the managed identity of the machine (O(client_id)
        picks a user-assigned one).
    type: str
    default: auto
    choices: [auto, cli, env, msi]
  client_id:
    description:
      - The application (client) id of a service principal used with O(secret) and O(tenant), or the client id of a
        user-assigned managed identity with O(auth_source=msi) or V(auto).
    type: str
  secret:
    description:
      - The client secret of the service principal O(client_id).
    type: str
  tenant:
    description:
      - The Entra ID tenant of the service principal, or of the Azure CLI login to use.
    type: str
  cloud_environment:
    description:
      - The Azure cloud whose Resource Manager and Entra ID authority are used.
    type: str
    default: AzureCloud
    choices: [AzureCloud, AzureChinaCloud, AzureUSGovernment]
  management_endpoint:
    description:
      - The Azure Resource Manager URL, overriding the one of O(cloud_environment), for other sovereign or private
        clouds and for the IMDS simulator's ARM facade (for example C(http://127.0.0.1:18500)).
      - Tokens from azure-identity are requested for this URL plus C(/.default).
    type: str
  bearer_token:
    description:
      - An access token for Azure Resource Manager, used as it is (no azure-identity needed), for example from
        C(az account get-access-token --query accessToken -o tsv).
    type: str
  timeout:
    description:
      - Seconds the whole task may take, waits for throttling (HTTP 429 C(Retry-After), an exhausted Resource Graph
        quota) and retries of HTTP 5xx and connection failures included. A wait that would end past it fails the
        task at once with a message saying so.
    type: float
    default: 120
notes:
  - Reading and acknowledging Scheduled Events through Azure needs the C(ScheduledEventContributor) role on the
    VMs, availability sets or scale sets (or their resource group or subscription), and the resources must publish
    their events to Event Grid and Resource Graph (C(scheduledEventsPolicy)); see the collection's
    docs/fleet_plane.md.
  - "These modules call Azure, not the VMs. Run them on the controller (C(delegate_to: localhost), C(run_once: true))
    or on any host with network access to Azure Resource Manager."
'''

    # The options choosing what the fleet modules read from Resource Graph.
    FLEET_SCOPE = r'''
options:
  subscriptions:
    description:
      - The subscription ids to read. Without them, every subscription the identity can read.
    type: list
    elements: str
    aliases: [subscription_ids]
  resource_groups:
    description:
      - Only events of resources in these resource groups (compared without case).
    type: list
    elements: str
  resource_names:
    description:
      - Only events owned by these VMs or scale sets, by their ARM resource name (compared without case). Events of a
        scale-set instance belong to the scale set.
    type: list
    elements: str
  page_size:
    description:
      - Rows per Resource Graph page, 1 to 1000.
    type: int
    default: 1000
'''
