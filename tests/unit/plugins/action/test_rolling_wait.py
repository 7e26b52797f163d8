# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""rolling_wait: the wait between two rounds of rolling maintenance, on the controller, under a clock the test drives."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.azure_maintenance.scheduled_events.plugins.action.rolling_wait import run_wait, seconds_to_wait
from ansible_collections.azure_maintenance.scheduled_events.plugins.modules import rolling_wait

from controller_task_harness import controller_task


@pytest.mark.parametrize('seconds, max_seconds, expected', [
    (3.25, 5.0, 3.25),
    # The round is due already (the last one took longer than the poll interval).
    (0.0, 5.0, 0.0),
    (-1.7, 5.0, 0.0),
    # A clock that jumped makes a long wait: never beyond the bound.
    (7200.0, 5.0, 5.0),
    (3.0, -1.0, 0.0),
])
def test_the_wait_is_what_was_asked_within_zero_and_the_bound(seconds, max_seconds, expected):
    assert seconds_to_wait(seconds, max_seconds) == expected


@pytest.mark.parametrize('seconds, sleeps, waited', [
    (2.5, [2.5], 2.5),
    # Nothing to wait for: no sleep at all, not even a zero one.
    (-0.4, [], 0.0),
    (0.0, [], 0.0),
])
def test_the_task_sleeps_once_and_says_how_long(seconds, sleeps, waited):
    slept = []
    # The clock is read before and after the wait; only sleeping moves it.
    readings = iter([100.0, 100.0 + sum(sleeps)])
    result = run_wait({'seconds': seconds, 'max_seconds': 3600.0}, clock=lambda: next(readings), sleep=slept.append)
    assert slept == sleeps
    assert result == {'changed': False, 'waited': waited}


def action(args, check_mode=False):
    return controller_task('rolling_wait', args, check_mode)


def test_the_action_waits_in_this_process_and_runs_no_module(monkeypatch):
    plugin = action({'seconds': '0.01', 'max_seconds': 5})

    def no_module(*args, **kwargs):
        raise AssertionError('rolling_wait ran a module: %r %r' % (args, kwargs))

    monkeypatch.setattr(plugin, '_execute_module', no_module)
    result = plugin.run(task_vars={})
    assert result.get('failed') is not True, result
    assert result['changed'] is False and result['waited'] >= 0.01


@pytest.mark.parametrize('args, message', [
    ({}, 'missing required arguments: seconds'),
    ({'seconds': 'soon'}, "seconds"),
    ({'seconds': 1, 'poll': 2}, 'poll. Supported parameters include: max_seconds, seconds'),
])
def test_bad_arguments_fail_the_task_and_say_which(args, message):
    result = action(args).run(task_vars={})
    assert result['failed'] is True
    assert message in result['msg'] and 'rolling_wait' in result['msg']


def test_the_module_file_run_on_a_host_refuses_and_says_how_to_call_it(tmp_path):
    """Only reached when the action plugin is bypassed: the module file run by hand, as a host would run it."""
    arguments = tmp_path / 'args.json'
    arguments.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': {'seconds': 1}}), encoding='utf-8')
    # The collection importable as a host would get it (AnsiballZ packs its module_utils in).
    env = dict(os.environ, PYTHONPATH=os.environ['ANSIBLE_COLLECTIONS_PATH'])
    done = subprocess.run([sys.executable, '-m', rolling_wait.__name__, str(arguments)], capture_output=True,
                          text=True, timeout=60, check=False, env=env)
    result = json.loads(done.stdout)
    assert result['failed'] is True
    assert 'runs on the controller through its action plugin' in result['msg']


def test_loading_the_plugin_loads_the_rolling_filters_for_the_workers_forked_after_it():
    """ansible-core loads the action's class in its main process; the rounds' workers fork from it with the filters."""
    collection = 'ansible_collections.azure_maintenance.scheduled_events.plugins'
    script = (
        'import json, sys; import {collection}.action.rolling_wait; '
        'print(json.dumps(sorted(name for name in sys.modules if name.startswith("{collection}.filter."))))'
    ).format(collection=collection)
    env = dict(os.environ, PYTHONPATH=os.environ['ANSIBLE_COLLECTIONS_PATH'])
    done = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True, timeout=60, check=True,
                          env=env)
    assert json.loads(done.stdout) == [collection + '.filter.rolling', collection + '.filter.rolling_fleet']
