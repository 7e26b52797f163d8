# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A stage for rolling maintenance: simulated VMs, their HTTP backends, a real
HAProxy in front, a load generator, and ansible-playbook. Used by the e2e
test, the AWX runner test, the benchmark and the demo.

Its modules import the simulator's package (tests/simulator): it is put on
the path here, once, before any of them is imported."""

import os
import sys

SIMULATOR_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'simulator')
if SIMULATOR_DIR not in sys.path:
    sys.path.insert(0, SIMULATOR_DIR)
