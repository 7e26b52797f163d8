# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures running the hook service daemon against an IMDS simulator of this session's own.

The helpers live in service_daemon_harness.py, which tests import by that name.
"""

import os

import pytest

from service_daemon_harness import VM_NAMES, WORLD, Daemon, world_at
from imds_simulator.process import SimulatorProcess


@pytest.fixture(scope='session')
def simulator_process(tmp_path_factory):
    """A simulator on ports the kernel chose, stopped at the end; its VMs keep their ports across resets."""
    with SimulatorProcess(tmp_path_factory.mktemp('service-simulator'), config=WORLD,
                          extra_args=['--log-level', 'WARNING']) as running:
        running.world = world_at(dict((name, running.address(name)) for name in VM_NAMES))
        yield running


@pytest.fixture
def simulator(simulator_process):
    """The simulator's control client, reset to the two-VM world."""
    simulator_process.control.reset(simulator_process.world)
    return simulator_process.control


@pytest.fixture
def daemon_factory(tmp_path, simulator_process):
    daemons = []

    def make(vm_index=0, name='daemon'):
        daemon = Daemon(tmp_path / name, simulator_process.endpoint(VM_NAMES[vm_index]))
        daemons.append(daemon)
        return daemon

    os.chmod(str(tmp_path), 0o755)
    yield make
    for daemon in daemons:
        if daemon.process is not None:
            daemon.kill()
        daemon.kill_running_hooks()


@pytest.fixture
def daemon(daemon_factory):
    return daemon_factory()
