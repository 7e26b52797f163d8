# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parsing and normalizing Scheduled Events documents."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_document import (
    API_VERSIONS,
    DEFAULT_API_VERSION,
    NORMALIZED_EVENT_KEYS,
    decode_body,
    decode_document,
    normalize_event,
    parse_document,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import (
    MalformedDocumentError,
)

FREEZE_ID = 'C7061BAC-AFDC-4513-B24B-AA5F13A16123'
REBOOT_ID = '1ab2c3d4-0000-4e5f-8a9b-0c1d2e3f4a5b'
PREEMPT_ID = 'a1b2c3d4-e5f6-4789-abcd-ef0123456789'
TERMINATE_ID = 'f020ba2e-3bc0-4c40-a10b-86575a9eabd5'

# The facts' version table: which optional fields and event types each
# api-version sends.
FIELDS_SINCE = {'description': '2019-04-01', 'event_source': '2019-08-01', 'duration_in_seconds': '2020-07-01'}
TYPES_SINCE = {'Preempt': '2017-11-01', 'Terminate': '2019-01-01'}


def test_api_versions_are_the_documented_table():
    assert API_VERSIONS == ('2017-03-01', '2017-08-01', '2017-11-01', '2019-01-01', '2019-04-01', '2019-08-01',
                            '2020-07-01')
    assert DEFAULT_API_VERSION == '2020-07-01'


@pytest.mark.parametrize('api_version', API_VERSIONS)
def test_every_api_version_normalizes_with_nulls_for_missing_fields(fixture_bytes, api_version):
    body = fixture_bytes('document_%s.json' % api_version)
    normalized = parse_document(decode_document(body), api_version)

    assert normalized['document_incarnation'] == 7
    assert normalized['warnings'] == []
    by_type = dict((event['event_type'], event) for event in normalized['events'])
    expected_types = ['Freeze', 'Reboot'] + [name for name, since in sorted(TYPES_SINCE.items(), key=lambda i: i[1])
                                             if api_version >= since]
    assert [event['event_type'] for event in normalized['events']] == expected_types
    for event in normalized['events']:
        assert set(event) == set(NORMALIZED_EVENT_KEYS)
        assert event['resource_type'] == 'VirtualMachine'
        for key, since in FIELDS_SINCE.items():
            if api_version >= since:
                assert event[key] is not None, key
            else:
                assert event[key] is None, key

    freeze = by_type['Freeze']
    assert freeze['event_id'] == FREEZE_ID
    assert freeze['event_status'] == 'Scheduled'
    # Underscores of the 2017-03-01 preview are gone, so names match VM identity.
    assert freeze['resources'] == ['WestNO_0', 'WestNO_1']
    assert freeze['not_before_raw'] == 'Mon, 11 Apr 2022 22:26:58 GMT'
    assert freeze['not_before'] == '2022-04-11T22:26:58Z'
    reboot = by_type['Reboot']
    assert reboot['event_status'] == 'Started'
    assert reboot['not_before_raw'] == ''
    assert reboot['not_before'] is None
    assert reboot['resources'] == ['WestNO_2']
    if api_version >= '2019-04-01':
        assert freeze['description'].startswith('Virtual machine is being paused')
    if api_version >= '2019-08-01':
        assert (freeze['event_source'], reboot['event_source']) == ('Platform', 'User')
    if api_version >= '2020-07-01':
        assert (freeze['duration_in_seconds'], reboot['duration_in_seconds']) == (5, -1)
        # 0 is a duration, not a missing one.
        assert by_type['Preempt']['duration_in_seconds'] == 0
    if api_version >= '2019-01-01':
        assert by_type['Terminate']['resources'] == ['myScaleSet_3']
        assert by_type['Terminate']['event_id'] == TERMINATE_ID


def test_underscore_is_stripped_only_for_the_2017_03_01_preview(fixture_json):
    document = fixture_json('document_2017-08-01.json')
    document['Events'][0]['Resources'] = ['_WestNO_0', 'WestNO_1']
    stripped = parse_document(document, '2017-03-01')['events'][0]['resources']
    kept = parse_document(document, '2017-08-01')['events'][0]['resources']
    assert stripped == ['WestNO_0', 'WestNO_1']
    # From 2017-08-01 on a leading underscore is part of the real name.
    assert kept == ['_WestNO_0', 'WestNO_1']


def test_only_one_underscore_is_stripped():
    event, dummy = normalize_event({'EventId': FREEZE_ID, 'Resources': ['__double']}, '2017-03-01')
    assert event['resources'] == ['_double']


def test_default_api_version_is_the_current_one(fixture_json):
    document = fixture_json('document_2020-07-01.json')
    assert parse_document(document) == parse_document(document, '2020-07-01')


def test_westno_lifecycle_documents(fixture_json):
    documents = [parse_document(fixture_json('westno_incarnation_%d.json' % number)) for number in (1, 2, 3, 4)]
    assert [doc['document_incarnation'] for doc in documents] == [1, 2, 3, 4]
    assert documents[0]['events'] == [] and documents[3]['events'] == []
    scheduled = documents[1]['events'][0]
    started = documents[2]['events'][0]
    assert scheduled == {
        'event_id': FREEZE_ID,
        'event_type': 'Freeze',
        'resource_type': 'VirtualMachine',
        'resources': ['WestNO_0', 'WestNO_1'],
        'event_status': 'Scheduled',
        'not_before_raw': 'Mon, 11 Apr 2022 22:26:58 GMT',
        'not_before': '2022-04-11T22:26:58Z',
        'description': 'Virtual machine is being paused because of a memory-preserving Live Migration operation.',
        'event_source': 'Platform',
        'duration_in_seconds': 5,
    }
    # Once Started, NotBefore is an empty string: no warning, no timestamp.
    assert started['event_status'] == 'Started'
    assert started['not_before_raw'] == '' and started['not_before'] is None
    assert documents[2]['warnings'] == []


def test_unknown_event_types_statuses_and_sources_are_kept(fixture_json):
    normalized = parse_document(fixture_json('unknown_type_and_status.json'))
    event = normalized['events'][0]
    kept = (event['event_type'], event['event_status'], event['event_source'])
    assert kept == ('LiveResize', 'Postponed', 'Automation')
    assert event['resource_type'] == 'VirtualMachineScaleSetInstance'
    assert normalized['warnings'] == []


def test_empty_events_and_null_events_mean_nothing_scheduled():
    assert parse_document({'DocumentIncarnation': 0, 'Events': []})['events'] == []
    assert parse_document({'DocumentIncarnation': 0, 'Events': None})['events'] == []
    assert parse_document({'DocumentIncarnation': 0})['events'] == []


@pytest.mark.parametrize('value, expected', [(0, 0), (41, 41), ('17', 17), (' 8 ', 8), ('-2', -2), (2.0, 2),
                                             ('3.0', 3)])
def test_incarnation_integer_forms(value, expected):
    assert parse_document({'DocumentIncarnation': value, 'Events': []})['document_incarnation'] == expected


@pytest.mark.parametrize('value', [None, True, False, 2.5, '', 'two', '--5', '1e3', u'\u00b2', [], {}, '2.5',
                                   float('nan'), float('inf'), 10 ** 30, '9' * 5000])
def test_incarnation_that_is_no_integer_is_malformed(value):
    with pytest.raises(MalformedDocumentError) as caught:
        parse_document({'DocumentIncarnation': value, 'Events': []})
    assert 'DocumentIncarnation' in str(caught.value)
    # Quoted, but never whole: a 5000-digit value must not flood a log.
    assert repr(value)[:30] in str(caught.value) and len(str(caught.value)) < 300
    assert caught.value.retryable


def test_missing_incarnation_is_malformed(fixture_json):
    with pytest.raises(MalformedDocumentError, match='no whole-number DocumentIncarnation'):
        parse_document(fixture_json('malformed_no_incarnation.json'))


def test_top_level_array_is_malformed(fixture_json):
    with pytest.raises(MalformedDocumentError, match='not a JSON object.*list'):
        parse_document(fixture_json('malformed_top_level_array.json'))


@pytest.mark.parametrize('document', ['text', 3, None])
def test_scalar_documents_are_malformed(document):
    with pytest.raises(MalformedDocumentError, match='not a JSON object'):
        parse_document(document)


def test_events_not_a_list_is_malformed(fixture_json):
    with pytest.raises(MalformedDocumentError, match='Events of type dict, expected a list'):
        parse_document(fixture_json('malformed_events_not_list.json'))


def test_non_object_entries_are_dropped_with_a_warning_each(fixture_json):
    normalized = parse_document(fixture_json('malformed_events_entries.json'))
    assert [event['event_id'] for event in normalized['events']] == [FREEZE_ID]
    assert len(normalized['warnings']) == 4
    assert normalized['warnings'][0].startswith('Events[0] is not an object')
    assert normalized['warnings'][3].startswith('Events[3] is not an object')


def test_decode_accepts_bytes_and_text(fixture_bytes):
    body = fixture_bytes('westno_incarnation_2.json')
    assert decode_document(body) == decode_document(body.decode('utf-8'))


@pytest.mark.parametrize('name', ['malformed_proxy_page.html', 'malformed_truncated.json'])
def test_body_that_is_not_json_is_malformed_with_an_excerpt(fixture_bytes, name):
    body = fixture_bytes(name)
    with pytest.raises(MalformedDocumentError) as caught:
        decode_document(body)
    message = str(caught.value)
    assert 'not JSON' in message
    assert body.decode('utf-8')[:20] in message
    assert 'proxy' in message
    assert caught.value.retryable


def test_long_non_json_body_is_cut_in_the_message():
    with pytest.raises(MalformedDocumentError) as caught:
        decode_document(b'x' * 5000)
    assert len(str(caught.value)) < 600
    assert '...' in str(caught.value)


def test_bytes_that_are_not_utf8_are_replaced_with_a_warning(fixture_bytes):
    document, warnings = decode_body(fixture_bytes('malformed_not_utf8.bin'))
    assert document['Events'][0]['EventId'] == u'\ufffd\ufffd\ufffd'
    assert len(warnings) == 1 and 'not UTF-8' in warnings[0] and 'offset 51' in warnings[0]


@pytest.mark.parametrize('body', [b'\xef\xbb\xbf{"DocumentIncarnation": 4, "Events": []}',
                                  u'\ufeff{"DocumentIncarnation": 4, "Events": []}'])
def test_a_byte_order_mark_is_accepted(body):
    assert decode_body(body) == ({'DocumentIncarnation': 4, 'Events': []}, [])


@pytest.mark.parametrize('value, expected', [(5, 5), (5.0, 5), ('5', 5), ('5.0', 5), (-1, -1), ('-1', -1),
                                             (5.5, None), (True, None), ('five', None), (None, None),
                                             ('9' * 5000, None), (float('nan'), None)])
def test_duration_follows_the_same_numeric_rule_as_the_incarnation(value, expected):
    event = normalize_event({'EventId': 'x', 'DurationInSeconds': value})[0]
    assert event['duration_in_seconds'] == expected
    if expected is not None:
        assert parse_document({'DocumentIncarnation': value, 'Events': []})['document_incarnation'] == expected


@pytest.mark.parametrize('field, key, sent, expected', [
    ('EventStatus', 'event_status', 'started', 'Started'),
    ('EventStatus', 'event_status', 'SCHEDULED ', 'Scheduled'),
    ('EventStatus', 'event_status', 'Completed', 'Completed'),
    ('EventType', 'event_type', 'freeze', 'Freeze'),
    ('EventSource', 'event_source', 'user', 'User'),
])
def test_known_values_are_spelled_one_way(field, key, sent, expected):
    assert normalize_event({'EventId': 'x', field: sent})[0][key] == expected


def test_absurdly_nested_json_is_malformed_not_a_crash():
    with pytest.raises(MalformedDocumentError):
        decode_document(b'[' * 200000)


def test_empty_body_is_malformed():
    with pytest.raises(MalformedDocumentError):
        decode_document(b'')


def test_event_without_id_is_kept_with_a_warning():
    normalized = parse_document({'DocumentIncarnation': 1, 'Events': [{'EventType': 'Reboot'}]})
    assert normalized['events'][0]['event_id'] is None
    assert normalized['events'][0]['event_type'] == 'Reboot'
    assert any('without EventId' in warning and 'Reboot' in warning for warning in normalized['warnings'])


def test_unreadable_not_before_is_kept_raw_with_a_warning():
    raw = {'EventId': FREEZE_ID, 'EventStatus': 'Scheduled', 'NotBefore': 'soon-ish'}
    event, warnings = normalize_event(raw)
    assert event['not_before_raw'] == 'soon-ish'
    assert event['not_before'] is None
    assert len(warnings) == 1 and FREEZE_ID in warnings[0] and 'soon-ish' in warnings[0]


def test_not_before_that_is_no_string_is_kept_raw_with_a_warning():
    event, warnings = normalize_event({'EventId': FREEZE_ID, 'NotBefore': 1649716018})
    assert event['not_before_raw'] == 1649716018
    assert event['not_before'] is None
    assert 'not a string' in warnings[0]


@pytest.mark.parametrize('value, expected', [
    (5, 5), (-1, -1), (0, 0), ('30', 30), (' 7 ', 7), (12.0, 12), (2.5, None), ('soon', None), (None, None),
    (True, None), ([], None),
])
def test_duration_forms(value, expected):
    event, dummy = normalize_event({'EventId': FREEZE_ID, 'DurationInSeconds': value})
    assert event['duration_in_seconds'] == expected


@pytest.mark.parametrize('value, expected', [
    (None, []), ('WestNO_0', ['WestNO_0']), (['a', None, 'b'], ['a', 'b']), ({'name': 'x'}, []), (7, []),
    ([7], ['7']),
])
def test_resources_forms(value, expected):
    event, warnings = normalize_event({'EventId': FREEZE_ID, 'Resources': value})
    assert event['resources'] == expected
    # Resources that cannot be read leave the event naming no VM: said, not silent.
    unreadable = value is not None and not isinstance(value, (str, list))
    assert [FREEZE_ID in warning and 'Resources is not a list' in warning for warning in warnings] == \
        ([True] if unreadable else [])


def test_non_string_texts_become_strings():
    event, dummy = normalize_event({'EventId': 12345, 'EventType': 7, 'EventStatus': 1, 'Description': 3.5,
                                    'EventSource': 0, 'ResourceType': False})
    assert (event['event_id'], event['event_type'], event['event_status']) == ('12345', '7', '1')
    assert (event['description'], event['event_source'], event['resource_type']) == ('3.5', '0', 'False')


def test_normalized_events_are_json_serializable(fixture_json):
    normalized = parse_document(fixture_json('document_2020-07-01.json'))
    assert json.loads(json.dumps(normalized)) == normalized


def test_parse_does_not_modify_the_raw_document(fixture_json):
    document = fixture_json('document_2017-03-01.json')
    snapshot = json.dumps(document, sort_keys=True)
    parse_document(document, '2017-03-01')
    assert json.dumps(document, sort_keys=True) == snapshot
