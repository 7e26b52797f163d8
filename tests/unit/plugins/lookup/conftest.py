# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Keep these controller-side tests from turning later module tests into "controller" code.

Importing ansible-core's controller packages (plugin loader, errors, display)
sets ``ansible.module_utils._internal.is_controller``; from then on, in
ansible-core 2.19, a module's ``warn()`` goes to the display instead of its
result, and module tests that assert on warnings fail depending on test order.
pytest imports every test file before running any, so the flag is already set
when any test starts: each test here runs as controller code and then puts the
flag back to what a module on a managed node sees (False).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

try:
    from ansible.module_utils import _internal as module_utils_internal
except ImportError:  # ansible-core before 2.19 has no such flag
    module_utils_internal = None

_HAS_FLAG = hasattr(module_utils_internal, 'is_controller')


@pytest.fixture(autouse=True)
def restore_module_context():
    if _HAS_FLAG:
        module_utils_internal.is_controller = True
    yield
    if _HAS_FLAG:
        module_utils_internal.is_controller = False
