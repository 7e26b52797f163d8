# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection's shared Scheduled Events core, as a subpackage of the daemon.

Its modules are ``plugins/module_utils/_se_*.py``: in a checkout of the
collection each one here is a symbolic link to that file, and the program the
role installs carries their text (templates/scheduled-events-service.py.j2).
Either way the daemon imports exactly the protocol code the modules use,
under one plain package name.
"""
