# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
name: scheduled_events
short_description: Read the Azure Scheduled Events of the controller's own VM
version_added: 0.1.0
description:
  - Reads the Azure IMDS Scheduled Events document B(of the controller), like a lookup always runs on the controller.
    This is for a controller that is itself an Azure VM (AWX or Ansible Automation Platform on Azure, a jump host) or
    to read the IMDS simulator through O(endpoint).
  - To read the events of managed nodes, use the P(azure_maintenance.scheduled_events.scheduled_events_info#module)
    module instead; IMDS answers each VM only about itself and its set or group, at an address reachable only from
    inside that VM.
  - Builds the same normalized document as the module, C({document_incarnation, resource_name, events}), each event
    annotated for O(resource_name) (C(affects_this_vm), C(leader), C(is_leader), C(seconds_until_not_before)).
  - Without O(query), returns the (filtered) events. With O(query), returns the result of that JMESPath expression
    applied to the normalized document.
  - Lookups return lists; use C(query()) or C(lookup(..., wantlist=true)) to always get a list, because C(lookup())
    turns a one-element result into that element.
author:
  - azure_maintenance.scheduled_events contributors (!UNKNOWN)
requirements:
  - jmespath (Python library on the controller; only needed when O(query) is used)
extends_documentation_fragment:
  - azure_maintenance.scheduled_events.common
  - azure_maintenance.scheduled_events.common.plugins
options:
  _terms:
    description:
      - Optionally one JMESPath expression, the same as O(query). Give either a term or O(query), not both.
    type: list
    elements: str
    required: false
  query:
    description:
      - A JMESPath expression applied to the normalized document C({document_incarnation, resource_name, events}),
        after the event filters. For example C(events[?affects_this_vm].event_id) or C(document_incarnation).
      - A list result is returned as it is; any other result is returned as a one-element list.
      - Needs the C(jmespath) Python library on the controller.
    type: str
  event_types:
    description:
      - Only keep events of these C(EventType)s (compared without case), V(Freeze), V(Reboot), V(Redeploy),
        V(Preempt) or V(Terminate).
    type: list
    elements: str
  event_statuses:
    description:
      - Only keep events with these C(EventStatus)es (compared without case), V(Scheduled) or V(Started).
    type: list
    elements: str
  event_sources:
    description:
      - Only keep events with these C(EventSource)s (compared without case), V(Platform) or V(User).
      - api-versions before 2019-08-01 send no C(EventSource), so no event matches this filter then.
    type: list
    elements: str
notes:
  - All options can also be set in C(ansible.cfg) (section C([azure_scheduled_events])), in environment variables
    (C(AZURE_SCHEDULED_EVENTS_*)) and in variables (C(azure_scheduled_events_*)), as listed for each option.
  - When O(resource_name) is not set, the controller's VM name is read from its instance metadata; if that fails the
    controller's short host name is used and a warning says so.
  - The variable C(azure_scheduled_events_resource_name) is not read, as in an inventory it names a managed host's VM
    (for the shipped playbooks and the fleet plane), never the controller's, so a lookup in a play over those hosts
    would annotate the controller's events for another VM.
seealso:
  - module: azure_maintenance.scheduled_events.scheduled_events_info
'''

EXAMPLES = r'''
- name: Maintenance coming for the AWX node itself (an Azure VM)
  ansible.builtin.debug:
    msg: "{{ query('azure_maintenance.scheduled_events.scheduled_events') }}"

- name: Ids of the events affecting the controller, through the simulator
  ansible.builtin.debug:
    msg: >-
      {{ query('azure_maintenance.scheduled_events.scheduled_events',
               endpoint='http://127.0.0.1:18101/metadata/scheduledevents',
               query='events[?affects_this_vm].event_id') }}

- name: The DocumentIncarnation alone (lookup() unwraps a one-element result)
  ansible.builtin.debug:
    msg: "{{ lookup('azure_maintenance.scheduled_events.scheduled_events', 'document_incarnation') }}"

- name: Only Reboots the platform scheduled
  ansible.builtin.set_fact:
    controller_reboots: >-
      {{ query('azure_maintenance.scheduled_events.scheduled_events',
               event_types=['Reboot'], event_sources=['Platform']) }}

- name: Options can come from variables, like other lookups
  vars:
    azure_scheduled_events_endpoint: http://127.0.0.1:18101/metadata/scheduledevents
    azure_scheduled_events_api_version: '2019-08-01'
  ansible.builtin.debug:
    msg: "{{ query('azure_maintenance.scheduled_events.scheduled_events', query='resource_name') }}"
'''

RETURN = r'''
_raw:
  description:
    - Without O(query), the normalized events of the controller's document that pass the filters, each a dictionary
      with C(event_id), C(event_type), C(event_status), C(event_source), C(resource_type), C(resources), C(not_before),
      C(not_before_raw), C(description), C(duration_in_seconds), C(affects_this_vm), C(leader), C(is_leader) and
      C(seconds_until_not_before), as described for the
      P(azure_maintenance.scheduled_events.scheduled_events_info#module) module.
    - With O(query), the query result (a list as it is, anything else as a one-element list).
  type: list
  elements: raw
'''

from ansible import constants as C
from ansible.errors import AnsibleError
from ansible.plugins.lookup import LookupBase
from ansible.utils.display import Display

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import ScheduledEventsError
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_info import EventSelection, fetch_info
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_options import (
    COMMON_ARGUMENT_SPEC,
    client_from_options,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._jmespath_query import run_query

display = Display()


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=self._option_variables(variables), direct=kwargs)
        expression = self._expression(terms)
        options = dict((name, self.get_option(name)) for name in COMMON_ARGUMENT_SPEC)
        selection = EventSelection.from_options(dict((name, self.get_option(name))
                                                     for name in ('event_types', 'event_statuses', 'event_sources')))
        client = None
        try:
            client = client_from_options(options)
            info = fetch_info(client, resource_name=options['resource_name'], selection=selection)
        except ScheduledEventsError as exc:
            raise AnsibleError('scheduled_events lookup (reading the controller\'s IMDS): %s' % exc.message)
        finally:
            if client is not None:
                client.close()
        for warning in info.warnings:
            display.warning('scheduled_events lookup: %s' % warning)
        if expression is None:
            return info.view['events']
        result = run_query(expression, info.view)
        return result if isinstance(result, list) else [result]

    def _option_variables(self, variables):
        """``variables`` with the ones that set options templated.

        Lookups get the play's variables untemplated, so
        ``azure_scheduled_events_endpoint: "{{ my_endpoint }}"`` would arrive
        as that literal text; only the variables this lookup reads are
        templated, the others are left alone (and may well be undefined).
        """
        if not variables or self._templar is None:
            return variables
        definitions = C.config.get_configuration_definitions('lookup', self._load_name) or {}
        names = set()
        for definition in definitions.values():
            names.update(entry['name'] for entry in definition.get('vars') or [])
        templated = dict(variables)
        for name in names.intersection(variables):
            templated[name] = self._templar.template(variables[name])
        return templated

    def _expression(self, terms):
        query = self.get_option('query')
        terms = [term for term in terms or [] if term is not None]
        if len(terms) > 1:
            raise AnsibleError('scheduled_events lookup takes at most one term, a JMESPath expression; got %d. '
                               'Combine them into one expression, for example with a multiselect hash {a: ..., b: ...}'
                               % len(terms))
        if terms and query:
            raise AnsibleError('scheduled_events lookup got both a term (%r) and query=%r; give the JMESPath '
                               'expression only once' % (terms[0], query))
        return terms[0] if terms else query
