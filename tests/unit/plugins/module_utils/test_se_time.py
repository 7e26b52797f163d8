# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NotBefore timestamps: every form read, junk never fatal."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_time import (
    format_iso_utc,
    format_rfc_1123,
    normalize_not_before,
    parse_timestamp,
    seconds_until,
)

# Mon, 11 Apr 2022 22:26:58 GMT
EPOCH = 1649716018


@pytest.mark.parametrize('text', [
    'Mon, 11 Apr 2022 22:26:58 GMT',            # RFC 1123, what IMDS sends
    'Mon, 11 Apr 2022 22:26:58 +0000',
    'Mon, 11 Apr 2022 22:26:58',                # no zone: IMDS only speaks GMT
    '11 Apr 2022 22:26:58 GMT',                 # weekday is optional
    'Tue, 12 Apr 2022 00:26:58 +0200',
    'Mon, 11 Apr 2022 15:26:58 PDT',
    'Monday, 11-Apr-22 22:26:58 GMT',           # RFC 850
    'Mon Apr 11 22:26:58 2022',                 # asctime
    'Mon Apr 11 22:26:58 2022 GMT',
    '2022-04-11T22:26:58Z',                     # ISO 8601 variants
    '2022-04-11t22:26:58Z'.replace('t', 'T'),
    '2022-04-11T22:26:58z',
    '2022-04-11T22:26:58',
    '2022-04-11 22:26:58',
    '2022-04-11T22:26:58.123Z',
    '2022-04-11T22:26:58,5Z',
    '2022-04-11T22:26:58.1234567Z',             # .NET writes seven digits
    '2022-04-12T00:26:58+02:00',
    '2022-04-12T00:26:58+0200',
    '2022-04-12T00:26:58+02',
    '2022-04-11T17:26:58.000-05:00',
    '2022-04-12T03:56:58+05:30',
    '2022-04-11T22:26:58 UTC',
    '2022-04-11T22:26:58 GMT',
    '4/11/2022 10:26:58 PM',                    # US style
    '04/11/2022 10:26:58 pm',
    '4/11/2022 22:26:58',
    '4/11/2022 10:26:58 PM UTC',
    '  Mon, 11 Apr 2022 22:26:58 GMT  ',
])
def test_accepted_forms_give_the_same_instant(text):
    assert parse_timestamp(text) == EPOCH


def test_minutes_only_iso_and_us_forms():
    assert parse_timestamp('2022-04-11T22:26Z') == EPOCH - 58
    assert parse_timestamp('4/11/2022 10:26 PM') == EPOCH - 58


def test_us_style_midnight_and_noon():
    assert parse_timestamp('4/11/2022 12:00:00 AM') == parse_timestamp('2022-04-11T00:00:00Z')
    assert parse_timestamp('4/11/2022 12:00:00 PM') == parse_timestamp('2022-04-11T12:00:00Z')


def test_leap_second_is_read_as_the_last_second_of_the_minute():
    assert parse_timestamp('2016-12-31T23:59:60Z') == parse_timestamp('2016-12-31T23:59:59Z')


def test_leap_day_exists_in_leap_years_only():
    assert parse_timestamp('2024-02-29T00:00:00Z') is not None
    assert parse_timestamp('2023-02-29T00:00:00Z') is None


@pytest.mark.parametrize('text', [
    '',
    '   ',
    'junk',
    'tomorrow',
    'NaN',
    '0',
    '1649716018',
    'Mon, 31 Feb 2022 22:26:58 GMT',            # impossible dates
    'Mon, 11 Apr 2022 25:26:58 GMT',
    'Mon, 11 Apr 2022 22:61:58 GMT',
    '2022-13-01T00:00:00Z',
    '2022-00-10T00:00:00Z',
    '2022-04-31T00:00:00Z',
    '2022-04-00T00:00:00Z',
    '2022-04-11T24:00:00Z',
    '2022-04-11T22:26:61Z',
    '13/40/2022 10:26:58 PM',
    '4/11/2022 13:26:58 PM',
    '4/11/2022 0:26:58 AM',
    '2022-04-11T22:26:58+25:00',                # impossible zones
    '2022-04-11T22:26:58+02:75',
    'Mon, 11 Apr 2022 22:26:58 +9999',
    'Mon, 11 Apr 99999999999 22:26:58 GMT',     # years no clock can hold
    'Mon, 11 Apr 10000 22:26:58 GMT',
    '0000-01-01T00:00:00Z',
    '2022-04-11T22:26:58Zjunk',
    '2022-04-11',
    'Mon, 11 Apr',
    '\x00\x01\x02',
    u'\u0662\u0660\u0662\u0662-04-11T22:26:58Z',  # digits of other scripts
    u'Mon, \u0661\u0661 Apr 2022 22:26:58 GMT',
    '9' * 500,
])
def test_junk_is_none_and_never_raises(text):
    assert parse_timestamp(text) is None


@pytest.mark.parametrize('value', [None, 1649716018, 1649716018.0, b'Mon, 11 Apr 2022 22:26:58 GMT', [], {}])
def test_non_text_is_none(value):
    assert parse_timestamp(value) is None


def test_normalize_documented_form():
    assert normalize_not_before('Mon, 11 Apr 2022 22:26:58 GMT') == ('2022-04-11T22:26:58Z', None)


@pytest.mark.parametrize('raw', ['', '   ', None])
def test_normalize_started_or_missing_is_none_without_warning(raw):
    assert normalize_not_before(raw) == (None, None)


@pytest.mark.parametrize('raw', ['junk', 'Mon, 31 Feb 2022 22:26:58 GMT', 'Mon, 11 Apr 99999999999 22:26:58 GMT'])
def test_normalize_junk_gives_a_warning_naming_the_value(raw):
    iso, warning = normalize_not_before(raw)
    assert iso is None
    assert repr(raw) in warning and 'kept raw' in warning


@pytest.mark.parametrize('raw', [1649716018, 3.5, ['Mon, 11 Apr 2022 22:26:58 GMT'], {'a': 1}, True])
def test_normalize_non_string_gives_a_warning(raw):
    iso, warning = normalize_not_before(raw)
    assert iso is None
    assert 'not a string' in warning


def test_normalize_converts_zones_to_utc():
    assert normalize_not_before('2022-04-12T00:26:58+02:00') == ('2022-04-11T22:26:58Z', None)


def test_formatters_round_trip():
    assert format_iso_utc(EPOCH) == '2022-04-11T22:26:58Z'
    assert format_rfc_1123(EPOCH) == 'Mon, 11 Apr 2022 22:26:58 GMT'
    assert parse_timestamp(format_rfc_1123(EPOCH)) == EPOCH
    assert parse_timestamp(format_iso_utc(EPOCH)) == EPOCH


def test_seconds_until_with_a_fixed_now():
    assert seconds_until('2022-04-11T22:26:58Z', now=EPOCH - 900) == 900
    assert seconds_until('2022-04-11T22:26:58Z', now=EPOCH + 30) == -30
    assert seconds_until('2022-04-11T22:26:58Z', now=EPOCH - 0.6) == 1
    assert seconds_until(None, now=EPOCH) is None
    assert seconds_until('junk', now=EPOCH) is None


def test_seconds_until_defaults_to_the_current_time():
    # Any instant in 2022 is in the past for the current clock.
    assert seconds_until('2022-04-11T22:26:58Z') < 0
