# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""docs/rolling_maintenance.md shows the planner's transitions exactly as TRANSITIONS has them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._rolling_controller import (
    CONDITIONS,
    TRANSITIONS,
)

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..', 'docs', 'rolling_maintenance.md')


def transition_rows():
    return ['| `%s` | %s | `%s` | %s |' % row for row in TRANSITIONS]


def condition_lines():
    return ['- `%s`: %s' % (name, CONDITIONS[name]) for name in dict((row[1], None) for row in TRANSITIONS)]


def test_the_documented_table_is_the_code_table():
    with open(DOC, encoding='utf-8') as handle:
        text = handle.read()
    block = re.search(r'<!-- transitions:start.*?-->\n(.*?)<!-- transitions:end -->', text, re.S).group(1)
    rows = [line for line in block.splitlines() if line.startswith('| `')]
    assert rows == transition_rows()
    for line in condition_lines():
        assert line in text, line
