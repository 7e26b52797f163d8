# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A stage for rolling maintenance: simulated VMs, their HTTP backends, a real
HAProxy in front, a load generator, and ansible-playbook. Used by the e2e
test, the AWX runner test, the benchmark and the demo."""
