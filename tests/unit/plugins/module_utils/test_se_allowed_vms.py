# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""allowed_vms, the guard every approval path shares: IMDS events as well as Resource Graph ones."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_allowed_vms import (
    foreign_vms,
    keep_allowed,
    parse_arm_vm_id,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_approval import (
    plan_approval,
    validate_selection,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import (
    InvalidParameterError,
)

SUB = '8d10da13-8125-4ba9-a717-bf7490507b3d'
A = 'AAAAAAAA-0000-0000-0000-000000000001'
B = 'BBBBBBBB-0000-0000-0000-000000000002'
WEB_0 = '/subscriptions/%s/resourceGroups/rg-web/providers/Microsoft.Compute/virtualMachines/web-0' % SUB


def imds_event(event_id, resources):
    """As _se_document normalizes an IMDS event: no subscription, no resource group."""
    return {'event_id': event_id, 'event_type': 'Freeze', 'event_status': 'Scheduled', 'event_source': 'Platform',
            'resources': list(resources), 'not_before': 'Mon, 19 Sep 2016 18:29:47 GMT', 'duration_in_seconds': 5}


def plan(events, **selection):
    return plan_approval(events, 'web-0', validate_selection(scope='all', **selection))


def test_vm_ids_parse():
    assert parse_arm_vm_id(WEB_0) == {'subscription_id': SUB, 'resource_group': 'rg-web', 'resource_name': 'web-0'}
    assert parse_arm_vm_id(WEB_0 + '/providers/Microsoft.Maintenance/scheduledevents/' + A) is None
    assert parse_arm_vm_id('web-0') is None


@pytest.mark.parametrize('resources, allowed, outside', [
    (['web-0', 'web-1'], ['web-0', 'web-1'], []),
    (['web-0', 'web-1'], ['WEB-0'], ['web-1']),
    (['Web-0'], ['web-0'], []),
    ([], ['web-0'], ['(Resources is empty)']),
    # An IMDS event names VMs of the reading VM's availability set, and has
    # no resource group to compare an ARM id's with: the id allows its name.
    (['web-0', 'web-1'], [WEB_0], ['web-1']),
])
def test_imds_events(resources, allowed, outside):
    assert foreign_vms(imds_event(A, resources), allowed) == outside


def test_without_allowed_vms_the_plan_is_kept():
    planned = plan([imds_event(A, ['web-0', 'web-9'])], event_ids=[A])
    assert keep_allowed(planned, None, True, 'approved') is planned


def test_with_filters_an_event_naming_other_vms_is_skipped():
    planned = plan([imds_event(A, ['web-0']), imds_event(B, ['web-0', 'web-9'])], event_types=['Freeze'])
    kept = keep_allowed(planned, ['web-0'], False, 'approved')
    assert kept.approve_ids == [A]
    assert kept.skipped == [{'event_id': B, 'reason': 'foreign_vms', 'foreign_vms': ['web-9']}]


def test_with_ids_an_event_naming_other_vms_fails_the_task_before_anything_is_sent():
    # The caller named both events as ready: Azure added web-9 to B since it looked.
    planned = plan([imds_event(A, ['web-0']), imds_event(B, ['web-0', 'web-9'])], event_ids=[A, B])
    with pytest.raises(InvalidParameterError) as caught:
        keep_allowed(planned, ['web-0'], True, 'approved')
    assert str(caught.value).startswith('event_ids name events that also affect VMs outside allowed_vms: '
                                        '%s (names web-9). ' % B)
    assert 'so nothing was approved' in str(caught.value)
