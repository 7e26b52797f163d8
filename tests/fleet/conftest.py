# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Only puts this folder on sys.path; the helpers are in fleet_harness."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
