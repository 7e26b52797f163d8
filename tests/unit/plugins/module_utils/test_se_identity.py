# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which VM am I: override, IMDS compute name, host name fallback."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils import _se_identity
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_client import ImdsClient
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import (
    ImdsHttpError,
    MalformedDocumentError,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_identity import (
    COMPUTE_PATH,
    SOURCE_HOSTNAME,
    SOURCE_IMDS,
    SOURCE_OPTION,
    fallback_resource_name,
    get_compute,
    resolve_resource_name,
    resource_name_from_compute,
)

COMPUTE = '/metadata/instance/compute'


@pytest.fixture
def client(loopback_imds, fake_clock):
    client = ImdsClient(endpoint=loopback_imds.endpoint, retries=0, sleep=fake_clock.sleep,
                        monotonic=fake_clock.monotonic)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def host_named(monkeypatch):
    def name_host(name):
        monkeypatch.setattr(_se_identity.socket, 'gethostname', lambda: name)
    return name_host


def test_compute_path_is_the_documented_one():
    assert COMPUTE_PATH == '/metadata/instance/compute?api-version=2021-02-01'


def test_override_wins_without_asking_imds(client, loopback_imds):
    assert resolve_resource_name(client, override='WestNO_1') == ('WestNO_1', SOURCE_OPTION, None)
    assert loopback_imds.requests == []


def test_name_comes_from_imds_compute(client, loopback_imds, reply, fixture_json):
    loopback_imds.script(COMPUTE, reply(200, fixture_json('compute.json')))
    assert resolve_resource_name(client) == ('myScaleSet_3', SOURCE_IMDS, None)
    request = loopback_imds.requests[0]
    assert request.path == COMPUTE
    assert request.query == {'api-version': ['2021-02-01']}
    assert request.headers['Metadata'] == 'true'


def test_empty_override_asks_imds(client, loopback_imds, reply, fixture_json):
    loopback_imds.script(COMPUTE, reply(200, fixture_json('compute.json')))
    assert resolve_resource_name(client, override='')[1] == SOURCE_IMDS


def test_get_compute_returns_the_whole_object(client, loopback_imds, reply, fixture_json):
    loopback_imds.script(COMPUTE, reply(200, fixture_json('compute.json')))
    compute = get_compute(client)
    assert (compute['vmScaleSetName'], compute['platformUpdateDomain']) == ('myScaleSet', '3')


def test_get_compute_refuses_what_is_no_object(client, loopback_imds, reply):
    loopback_imds.script(COMPUTE, reply(200, ['myScaleSet_3']))
    with pytest.raises(MalformedDocumentError, match='not a JSON object'):
        get_compute(client)


@pytest.mark.parametrize('compute', [{}, {'name': ''}, {'name': None}, {'name': 7}, [], None])
def test_compute_without_usable_name_is_malformed(compute):
    with pytest.raises(MalformedDocumentError, match='no name'):
        resource_name_from_compute(compute)


def test_fallback_is_the_short_host_name(host_named):
    host_named('westno-1.internal.cloudapp.net')
    assert fallback_resource_name() == 'westno-1'


@pytest.mark.parametrize('status', [404, 500])
def test_imds_failure_falls_back_to_the_host_name_with_a_warning(client, loopback_imds, reply, host_named, status):
    host_named('vm-host.example.internal')
    loopback_imds.script(COMPUTE, reply(status, {'error': 'nope'}))
    name, source, warning = resolve_resource_name(client)
    assert (name, source) == ('vm-host', SOURCE_HOSTNAME)
    assert "using the host name 'vm-host'" in warning
    assert 'Set resource_name' in warning
    assert 'HTTP %d' % status in warning


def test_unreachable_imds_falls_back_too(closed_port, host_named, fake_clock):
    host_named('lonely')
    client = ImdsClient(endpoint='http://127.0.0.1:%d/metadata/scheduledevents' % closed_port, retries=0,
                        sleep=fake_clock.sleep, monotonic=fake_clock.monotonic)
    name, source, warning = resolve_resource_name(client)
    assert (name, source) == ('lonely', SOURCE_HOSTNAME)
    assert 'IMDS unreachable' in warning


def test_compute_without_name_falls_back(client, loopback_imds, reply, host_named):
    host_named('vm7')
    loopback_imds.script(COMPUTE, reply(200, {'vmScaleSetName': 'x'}))
    name, source, warning = resolve_resource_name(client)
    assert (name, source) == ('vm7', SOURCE_HOSTNAME)
    assert 'no name field' in warning


def test_errors_other_than_imds_ones_are_not_swallowed(monkeypatch, client):
    def broken(*args, **kwargs):
        raise RuntimeError('a bug, not an IMDS failure')
    monkeypatch.setattr(client, 'get_json', broken)
    with pytest.raises(RuntimeError):
        resolve_resource_name(client)


def test_deadline_is_passed_on(client, monkeypatch):
    seen = {}

    def record(path, deadline=None):
        seen['deadline'] = deadline
        raise ImdsHttpError('gone', status=410)
    monkeypatch.setattr(client, 'get_json', record)
    resolve_resource_name(client, deadline=1234.5)
    assert seen['deadline'] == 1234.5
