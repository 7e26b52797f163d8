# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Scheduled Events hook service daemon.

Everything about the IMDS protocol comes from the collection's shared core,
the subpackage ``se_service.core``; this package only adds what a
long-running poller needs (policy, state, hooks, metrics, notifications).
"""

VERSION = '0.1.0'
