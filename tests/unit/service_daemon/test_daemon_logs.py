# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The text log format keeps one record on one line, whatever IMDS puts in an event."""

import logging

import pytest

from se_service.logs import TextFormatter, escape_line_breaks


@pytest.mark.parametrize('text, expected', [
    ('plain', 'plain'),
    ('two\nlines', 'two\\nlines'),
    ('cr\r\nlf', 'cr\\r\\nlf'),
    ('back\\nslash', 'back\\\\nslash'),  # a literal backslash-n stays distinguishable from a line break
])
def test_line_breaks_are_escaped(text, expected):
    assert escape_line_breaks(text) == expected


def test_a_forged_line_in_an_event_field_stays_on_the_record_line():
    record = logging.LogRecord('x', logging.INFO, __file__, 1, 'event new: %s', ('A1\nERROR approved everything',), None)
    record.fields = {'description': 'first\nWARNING second', 'count': 2}
    line = TextFormatter().format(record)
    assert '\n' not in line and '\r' not in line
    assert line == 'INFO event new: A1\\nERROR approved everything count=2 description=first\\nWARNING second'
