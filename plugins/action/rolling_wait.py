# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin of rolling_wait: the wait between two rounds, in the worker that runs the task.

The rolling playbook used ansible.builtin.wait_for for it, which starts a
Python interpreter and loads a module each round: about a quarter of a
second of CPU and of waiting, in every round that waits.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.azure_maintenance.scheduled_events.plugins.filter import rolling as rolling_filters
from ansible_collections.azure_maintenance.scheduled_events.plugins.filter import rolling_fleet as rolling_fleet_filters
from ansible_collections.azure_maintenance.scheduled_events.plugins.modules import rolling_wait
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._controller_action import (
    ControllerAction,
)

# Not used here: loaded with this plugin so that the workers of the rounds
# find the rolling filters loaded. ansible-core loads the class of a task's
# action in its main process before it forks the task's workers (it reads
# BYPASS_HOST_LOOP), and keeps no bytecode of a collection's code: a worker
# that has to import the filters compiles them from source, about 30 ms of
# CPU in each of the two or three tasks that plan a round. Once the first
# round has waited, every later worker is a fork that has them.
LOADED_FOR_THE_ROUNDS = (rolling_filters, rolling_fleet_filters)


def seconds_to_wait(seconds, max_seconds):
    """The wait ``seconds`` asks for, never below zero nor above ``max_seconds``."""
    return min(max(0.0, seconds), max(0.0, max_seconds))


def run_wait(params, clock=time.monotonic, sleep=time.sleep):
    """The task result of rolling_wait; ``clock`` and ``sleep`` are for tests."""
    wanted = seconds_to_wait(params['seconds'], params['max_seconds'])
    began = clock()
    if wanted > 0:
        sleep(wanted)
    return {'changed': False, 'waited': round(clock() - began, 3)}


class ActionModule(ControllerAction):
    MODULE = 'azure_maintenance.scheduled_events.rolling_wait'
    module_code = rolling_wait

    def run_task(self, params, check_mode):
        del check_mode  # waiting changes nothing, so check mode waits too
        return run_wait(params)
