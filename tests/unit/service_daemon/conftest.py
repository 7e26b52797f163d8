# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the hook service daemon import its package ``se_service`` from the role, as the program does."""

import os
import sys

ROLE_FILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'roles',
                          'scheduled_events_service', 'files')
if os.path.normpath(ROLE_FILES) not in sys.path:
    sys.path.insert(0, os.path.normpath(ROLE_FILES))
