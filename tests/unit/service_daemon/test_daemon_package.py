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


# Run in a fresh interpreter: what the daemon imports, not what the test session already holds.
_STANDARD_LIBRARY_ONLY = r'''
import logging, os, sys, tempfile
sys.path.insert(0, sys.argv[1])
from se_service.cli import parse_arguments
from se_service.config import validate_config
from se_service.engine import Service
# Its own folder, removed at the end: nothing is left in TMPDIR.
with tempfile.TemporaryDirectory() as work:
    config = validate_config({'state_file': os.path.join(work, 'state.json'),
                              'hooks_dir': os.path.join(work, 'hooks')})
    service = Service(config, os.path.join(work, 'config.json'), logging.getLogger('package-test'))
    client = service._build_client()
    print(type(client.transport).__module__, type(client.transport).__name__,
          sorted(name for name in ('requests', 'urllib3') if name in sys.modules))
'''


def test_the_daemon_needs_nothing_beyond_the_standard_library():
    import subprocess
    import sys
    result = subprocess.run([sys.executable, '-c', _STANDARD_LIBRARY_ONLY, os.path.dirname(PACKAGE)],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    # The core's keep-alive http.client transport, the one the modules use.
    # even where requests is installed (as in the test environment), and requests is never imported.
    assert result.stdout.split() == ['se_service.core._se_transport', 'HttpClientTransport', '[]']
