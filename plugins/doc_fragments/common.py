# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The options every plugin of the collection shares. Modules use
    # DOCUMENTATION; controller plugins add PLUGINS, which says where else
    # (ansible.cfg, environment, variables) each option can be set.

    DOCUMENTATION = r'''
options:
  endpoint:
    description:
      - URL of the IMDS Scheduled Events endpoint, without query string.
      - The default is the address IMDS has inside every Azure VM. Set it to reach the IMDS simulator
        (for example C(http://127.0.0.1:18101/metadata/scheduledevents)) or an IMDS relay.
      - Other IMDS paths, such as the instance metadata used to learn O(resource_name), are taken from the same
        scheme, host and port.
      - Proxy settings (C(HTTP_PROXY) and friends) are never applied and redirects are never followed;
        IMDS must be reached directly.
    type: str
    default: http://169.254.169.254/metadata/scheduledevents
  api_version:
    description:
      - The Scheduled Events C(api-version) to request. IMDS requires one.
      - Older versions lack fields, which are then returned as V(null) (C(EventSource) before 2019-08-01,
        C(DurationInSeconds) before 2020-07-01, C(Description) before 2019-04-01), and hide event types they
        predate (C(Preempt) before 2017-11-01, C(Terminate) before 2019-01-01).
      - Known versions are 2017-03-01, 2017-08-01, 2017-11-01, 2019-01-01, 2019-04-01, 2019-08-01 and 2020-07-01.
    type: str
    default: '2020-07-01'
  timeout:
    description:
      - Seconds to wait for an answer to each attempt once connected.
      - The very first Scheduled Events request enables Scheduled Events for the VM and can take up to two minutes;
        that one attempt (and only that one, answered or not) is given at least 130 seconds, within O(deadline).
        Connecting is limited to 5 seconds (or this value if smaller), so a host that is not an Azure VM fails fast.
    type: float
    default: 10.0
  deadline:
    description:
      - The most seconds one operation may take in all (reading the events, approving, learning this VM's name),
        every attempt, retry and backoff included. Nothing runs longer, whatever O(timeout) and O(retries) allow.
      - The default leaves room for the two-minute first request and a few quick retries. Set it below 130 only
        where Scheduled Events are known to be enabled already (the VM made a request in the last 24 hours).
      - A wait of a module (its C(wait_timeout)) is bounded by its own time-out; each read within it by
        this one.
    type: float
    default: 150.0
  retries:
    description:
      - How many times to retry a request that failed with a connection error, a time-out, a malformed answer,
        HTTP 429 (throttling) or HTTP 5xx, with capped exponential backoff and jitter.
      - HTTP 410 is retried for up to about 70 seconds (within O(deadline)), as IMDS asks, unless this is V(0).
      - HTTP 400, 404 and 405 are never retried.
    type: int
    default: 5
  resource_name:
    description:
      - The name of this VM as it appears in the C(Resources) of events (for a scale-set instance something like
        C(myScaleSet_3)). It is often not the host name nor the inventory name.
      - When not set, it is read from the IMDS instance metadata (C(compute.name)) on the same origin as O(endpoint).
        If that fails, the short host name is used and a warning says so.
    type: str
'''

    PLUGINS = r'''
options:
  endpoint:
    env:
      - name: AZURE_SCHEDULED_EVENTS_ENDPOINT
    ini:
      - section: azure_scheduled_events
        key: endpoint
    vars:
      - name: azure_scheduled_events_endpoint
  api_version:
    env:
      - name: AZURE_SCHEDULED_EVENTS_API_VERSION
    ini:
      - section: azure_scheduled_events
        key: api_version
    vars:
      - name: azure_scheduled_events_api_version
  timeout:
    env:
      - name: AZURE_SCHEDULED_EVENTS_TIMEOUT
    ini:
      - section: azure_scheduled_events
        key: timeout
    vars:
      - name: azure_scheduled_events_timeout
  retries:
    env:
      - name: AZURE_SCHEDULED_EVENTS_RETRIES
    ini:
      - section: azure_scheduled_events
        key: retries
    vars:
      - name: azure_scheduled_events_retries
  deadline:
    env:
      - name: AZURE_SCHEDULED_EVENTS_DEADLINE
    ini:
      - section: azure_scheduled_events
        key: deadline
    vars:
      - name: azure_scheduled_events_deadline
  resource_name:
    env:
      - name: AZURE_SCHEDULED_EVENTS_RESOURCE_NAME
    ini:
      - section: azure_scheduled_events
        key: resource_name
'''
