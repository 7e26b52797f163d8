# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The daemon reaches the shared core as its plain subpackage ``se_service.core``."""

import ast
import glob
import os

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
PACKAGE = os.path.join(ROOT, 'roles', 'scheduled_events_service', 'files', 'se_service')
MODULE_UTILS = os.path.join(ROOT, 'plugins', 'module_utils')


def test_the_core_subpackage_links_every_core_file_and_nothing_else():
    core_files = sorted(os.path.basename(path) for path in glob.glob(os.path.join(MODULE_UTILS, '_se_*.py')))
    linked = sorted(name for name in os.listdir(os.path.join(PACKAGE, 'core')) if name != '__init__.py'
                    and name.endswith('.py'))
    assert linked == core_files, 'add or remove links in se_service/core/ to match plugins/module_utils/_se_*.py'
    for name in linked:
        link = os.path.join(PACKAGE, 'core', name)
        assert os.path.islink(link), '%s must be a link, so the daemon runs the same core as the modules' % link
        assert os.path.realpath(link) == os.path.realpath(os.path.join(MODULE_UTILS, name))
    assert not os.path.islink(os.path.join(PACKAGE, 'core', '__init__.py'))


def test_the_daemon_imports_the_core_only_as_its_subpackage():
    for path in glob.glob(os.path.join(PACKAGE, '*.py')):
        with open(path) as handle:
            tree = ast.parse(handle.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and '_se_' in node.module:
                assert node.level == 1 and node.module.startswith('core._se_'), '%s: %s' % (path, node.module)
            if isinstance(node, ast.Attribute) and node.attr == 'path':
                assert getattr(node.value, 'id', None) != 'sys', '%s changes sys.path' % path


def test_the_approval_policy_lives_with_the_daemon_alone():
    assert not os.path.exists(os.path.join(MODULE_UTILS, '_se_policy.py'))
    import se_service.policy
    import se_service.core._se_client
    assert se_service.policy.__name__ == 'se_service.policy'
    assert os.path.dirname(se_service.core._se_client.__file__) == os.path.join(PACKAGE, 'core')
