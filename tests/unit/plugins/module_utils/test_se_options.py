# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The shared option layer: argument_spec and client_from_options."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
import yaml

from ansible_collections.azure_maintenance.scheduled_events.plugins.doc_fragments.common import ModuleDocFragment
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_client import (
    DEFAULT_ENDPOINT,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import (
    InvalidParameterError,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_options import (
    COMMON_ARGUMENT_SPEC,
    EVENT_FILTER_ARGUMENT_SPEC,
    argument_spec,
    client_from_options,
)


def test_argument_spec_holds_the_common_options_and_the_module_own():
    spec = argument_spec(event_ids={'type': 'list', 'elements': 'str', 'required': True})
    assert set(spec) == {'endpoint', 'api_version', 'timeout', 'retries', 'deadline', 'resource_name',
                         'event_ids'}
    assert spec['event_ids']['required'] is True
    assert spec['endpoint'] == {'type': 'str', 'default': DEFAULT_ENDPOINT}


def test_argument_spec_is_a_copy():
    spec = argument_spec()
    spec['timeout']['default'] = 99
    spec['extra'] = {}
    assert COMMON_ARGUMENT_SPEC['timeout']['default'] == DEFAULT_TIMEOUT
    assert 'extra' not in argument_spec()


def test_argument_spec_accepts_the_filter_spec():
    spec = argument_spec(**EVENT_FILTER_ARGUMENT_SPEC)
    assert spec['event_types'] == {'type': 'list', 'elements': 'str'}
    assert spec['event_sources'] == {'type': 'list', 'elements': 'str'}


def test_documentation_matches_the_argument_spec():
    documented = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)['options']
    assert set(documented) == set(COMMON_ARGUMENT_SPEC)
    for name, spec in COMMON_ARGUMENT_SPEC.items():
        assert documented[name]['type'] == spec['type'], name
        if 'default' in spec:
            assert str(documented[name]['default']) == str(spec['default']), name
        else:
            assert 'default' not in documented[name], name


def test_client_from_empty_options_uses_the_defaults():
    client = client_from_options({})
    assert client.endpoint == DEFAULT_ENDPOINT
    assert client.api_version == '2020-07-01'
    assert client.timeout == DEFAULT_TIMEOUT
    assert client.policy.retries == DEFAULT_RETRIES


def test_client_from_options_with_none_values_uses_the_defaults():
    client = client_from_options(dict((name, None) for name in COMMON_ARGUMENT_SPEC))
    assert (client.endpoint, client.api_version, client.timeout, client.policy.retries) == (
        DEFAULT_ENDPOINT, '2020-07-01', DEFAULT_TIMEOUT, DEFAULT_RETRIES)


def test_client_from_options_applies_every_option(fake_clock, scripted_transport):
    transport = scripted_transport([])
    client = client_from_options({'endpoint': 'http://127.0.0.1:18101/metadata/scheduledevents',
                                  'api_version': '2019-08-01', 'timeout': 3, 'retries': 2,
                                  'resource_name': 'WestNO_0', 'unrelated': 'ignored'},
                                 transport=transport, sleep=fake_clock.sleep, monotonic=fake_clock.monotonic)
    assert client.events_url == 'http://127.0.0.1:18101/metadata/scheduledevents?api-version=2019-08-01'
    assert client.timeout == 3.0 and isinstance(client.timeout, float)
    assert client.policy.retries == 2
    assert client.transport is transport
    assert client.sleep == fake_clock.sleep


def test_client_from_untyped_configuration():
    # The daemon and the EDA source pass what a YAML or INI file held.
    client = client_from_options({'timeout': '2.5', 'retries': '4'})
    assert (client.timeout, client.policy.retries) == (2.5, 4)


@pytest.mark.parametrize('options, complaint', [
    ({'timeout': 'ten'}, 'timeout must be a positive number'),
    ({'timeout': 0}, 'timeout must be a positive number'),
    ({'retries': 'many'}, 'retries must be a whole number'),
    ({'retries': -2}, 'retries must be a whole number'),
    ({'api_version': '{latest}'}, 'api_version'),
    ({'endpoint': 'http://169.254.169.254/metadata/scheduledevents?api-version=2020-07-01'}, 'set api_version'),
    ({'endpoint': 'imds'}, 'not an http:// URL'),
])
def test_bad_options_are_parameter_errors(options, complaint):
    with pytest.raises(InvalidParameterError, match=complaint):
        client_from_options(options)
