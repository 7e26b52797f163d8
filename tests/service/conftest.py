# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Registers the fixtures of service_harness.py for the tests in this folder."""

from service_harness import daemon, daemon_factory, simulator, simulator_process  # noqa: F401  (pytest fixtures)
