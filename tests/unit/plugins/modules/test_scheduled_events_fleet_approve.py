# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""scheduled_events_fleet_approve's acknowledge step: the list form, and falling back to one request per event."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_arm import ArmError
from ansible_collections.azure_maintenance.scheduled_events.plugins.modules.scheduled_events_fleet_approve import (
    FleetApproval,
    module_argument_spec,
)

OWNER = '/subscriptions/s/resourcegroups/rg/providers/Microsoft.Compute/virtualMachines/vm0'
IDS = ['AAAAAAAA-0000-0000-0000-000000000001', 'BBBBBBBB-0000-0000-0000-000000000002']


def row(event_id):
    return {'id': OWNER + '/providers/Microsoft.Maintenance/scheduledevents/' + event_id, 'name': event_id,
            'subscriptionId': 's', 'resourceGroup': 'rg',
            'properties': {'EventId': event_id, 'EventType': 'Freeze', 'EventStatus': 'Scheduled',
                           'ResourceType': 'VirtualMachine', 'Resources': ['vm0'], 'EventSource': 'Platform',
                           'NotBefore': 'Mon, 11 Apr 2022 22:26:58 GMT', 'DurationInSeconds': 5}}


class FakeModule(object):
    check_mode = False

    def __init__(self, **params):
        self.params = dict((name, spec.get('default')) for name, spec in module_argument_spec().items())
        self.params.update(params)

    def warn(self, text):
        raise AssertionError(text)


class FakeClient(object):
    """Resource Graph answers the rows; the list form answers ``list_status`` (None: 200)."""

    def __init__(self, list_status=None, refuse=None):
        self.list_status = list_status
        self.refuse = refuse    # an event id whose own acknowledge ARM refuses with 403
        self.posts = []

    def renew(self):
        return None

    def monotonic(self):
        return 0.0

    def wait(self, seconds, why):
        return None

    def post(self, path, api_version, payload):
        self.posts.append((path.rsplit('/', 1)[-1], api_version))
        if path.endswith('/resources'):
            return {'data': [row(event_id) for event_id in IDS]}, {}
        if path.endswith('/scheduledevents') and self.list_status is not None:
            raise ArmError('refused', status=self.list_status)
        if self.refuse and path.endswith(self.refuse + '/acknowledge'):
            raise ArmError('forbidden', status=403)
        return {'value': 'Acknowledged'}, {}


@pytest.mark.parametrize('list_status, list_form, expected_posts, list_requests', [
    (None, True, [('scheduledevents', '2025-10-01-preview')], 1),
    (400, True, [('scheduledevents', '2025-10-01-preview')] + [('acknowledge', '2023-10-01-preview')] * 2, 0),
    (None, False, [('acknowledge', '2023-10-01-preview')] * 2, 0),
])
def test_list_form_and_its_fallback(list_status, list_form, expected_posts, list_requests):
    client = FakeClient(list_status)
    result = FleetApproval(FakeModule(event_ids=IDS, list_form=list_form), client).run()
    assert result['approved'] == IDS and result['changed']
    assert client.posts[1:] == expected_posts
    assert result['list_requests'] == list_requests


def test_a_list_form_error_that_is_not_about_the_request_is_raised():
    with pytest.raises(ArmError):
        FleetApproval(FakeModule(event_ids=IDS), FakeClient(403)).run()


def test_an_event_released_before_a_later_acknowledge_fails_is_a_change():
    approval = FleetApproval(FakeModule(event_ids=IDS, list_form=False), FakeClient(refuse=IDS[1]))
    with pytest.raises(ArmError):
        approval.run()
    # What the failed task reports: the first event is released in Azure.
    assert approval.result['approved'] == IDS[:1] and approval.result['changed'] is True
