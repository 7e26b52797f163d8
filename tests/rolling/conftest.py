# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Nothing shared here on purpose: helpers live in rolling_harness.py (system tests run as one session)."""
