# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What each module carries to a managed node: the collection's module_utils it imports, directly or not.

Ansible packs every module_utils file a module imports (found by reading its
imports, as here) into the payload it sends to the host. The IMDS modules run
on every VM; the fleet plane's ARM client and Resource Graph code must not
travel with them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import os

import pytest

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils import _se_select
from ansible_collections.azure_maintenance.scheduled_events.plugins.modules import scheduled_events_info

PACKAGE = 'ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils'
MODULES_DIR = os.path.dirname(os.path.abspath(scheduled_events_info.__file__))
MODULE_UTILS_DIR = os.path.dirname(os.path.abspath(_se_select.__file__))
FLEET_PLANE_CODE = {'_se_arm', '_se_graph', '_se_fleet_approval'}


def imported_module_utils(path):
    """Names of the collection's module_utils files that the Python file at ``path`` imports."""
    with open(path, encoding='utf-8') as handle:
        tree = ast.parse(handle.read(), path)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:  # from ._se_x import ... (inside module_utils)
                names.add(node.module)
            elif node.level == 0 and node.module and node.module.startswith(PACKAGE + '.'):
                names.add(node.module[len(PACKAGE) + 1:])
            elif node.level == 0 and node.module == PACKAGE:
                names.update(alias.name for alias in node.names)
    return names


def payload(module_name):
    """Every module_utils file the module needs, following imports from file to file."""
    needed, pending = set(), imported_module_utils(os.path.join(MODULES_DIR, module_name + '.py'))
    while pending:
        name = pending.pop()
        if name in needed:
            continue
        needed.add(name)
        pending |= imported_module_utils(os.path.join(MODULE_UTILS_DIR, name + '.py'))
    return needed


@pytest.mark.parametrize('module_name', ['scheduled_events_info', 'scheduled_events_approve'])
def test_the_imds_modules_carry_no_fleet_plane_code(module_name):
    assert not payload(module_name) & FLEET_PLANE_CODE, sorted(payload(module_name))


@pytest.mark.parametrize('module_name', ['scheduled_events_fleet_info', 'scheduled_events_fleet_approve'])
def test_the_fleet_modules_carry_it(module_name):
    # The same walk finds the ARM code where it is needed, so the test above can fail.
    assert {'_se_arm', '_se_graph'} <= payload(module_name)
    assert '_se_arm_options' in payload(module_name)
