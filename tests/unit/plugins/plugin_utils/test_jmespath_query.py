# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the controller's JMESPath helper."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleError

from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils import _jmespath_query
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._jmespath_query import run_query

VIEW = {
    'document_incarnation': 3,
    'resource_name': 'WestNO_0',
    'events': [
        {'event_id': 'A', 'event_type': 'Freeze', 'affects_this_vm': True, 'resources': ['WestNO_0']},
        {'event_id': 'B', 'event_type': 'Reboot', 'affects_this_vm': False, 'resources': ['WestNO_1']},
    ],
}


@pytest.mark.parametrize('expression, expected', [
    ('document_incarnation', 3),
    ('events[?affects_this_vm].event_id', ['A']),
    ("events[?event_type=='Reboot'] | [0].resources[0]", 'WestNO_1'),
    ('length(events)', 2),
    ('{id: events[0].event_id, name: resource_name}', {'id': 'A', 'name': 'WestNO_0'}),
    ('no_such_key', None),
])
def test_queries(expression, expected):
    assert run_query(expression, VIEW) == expected


@pytest.mark.parametrize('expression', ['', '   ', None, 3])
def test_empty_or_non_text_expression(expression):
    with pytest.raises(AnsibleError) as caught:
        run_query(expression, VIEW)
    assert 'non-empty JMESPath expression' in str(caught.value)


def test_syntax_error_names_the_expression():
    with pytest.raises(AnsibleError) as caught:
        run_query('events[?', VIEW)
    assert "query 'events[?' is not a valid JMESPath expression" in str(caught.value)


def test_runtime_error_is_reported():
    with pytest.raises(AnsibleError) as caught:
        run_query('length(document_incarnation)', VIEW)
    assert 'failed on the Scheduled Events document' in str(caught.value)


def test_missing_library(monkeypatch):
    monkeypatch.setattr(_jmespath_query, 'jmespath', None)
    with pytest.raises(AnsibleError) as caught:
        run_query('events', VIEW)
    assert 'jmespath Python library on the controller' in str(caught.value)
