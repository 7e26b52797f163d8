# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The quiet stdout callback's choices; tests/rolling/test_output.py runs it in a real playbook."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from unittest import mock

import pytest

from ansible_collections.azure_maintenance.scheduled_events.plugins.callback import quiet


@pytest.mark.parametrize('result, lines', [
    ({'msg': ['round 3', 'Freeze E1: pending -> draining (fits)'], 'changed': True}, ['round 3',
                                                                                      'Freeze E1: pending -> draining (fits)']),
    ({'msg': 'one\ntwo'}, ['one', 'two']),
    ({'msg': ''}, ['']),
    ({'report_path': '/tmp/r.html', 'changed': False, '_ansible_verbose_always': True}, ['/tmp/r.html']),
])
def test_message_lines(result, lines):
    assert quiet.message_lines(result) == lines


@pytest.mark.parametrize('summary, worth', [
    ({'ok': 9, 'changed': 2, 'skipped': 4, 'failures': 0, 'unreachable': 0, 'rescued': 0, 'ignored': 0}, False),
    ({'ok': 9, 'failures': 1, 'unreachable': 0, 'rescued': 0, 'ignored': 0}, True),
    ({'ok': 9, 'failures': 0, 'unreachable': 1, 'rescued': 0, 'ignored': 0}, True),
    ({'ok': 9, 'failures': 0, 'unreachable': 0, 'rescued': 1, 'ignored': 0}, True),
    ({'ok': 9, 'failures': 0, 'unreachable': 0, 'rescued': 0, 'ignored': 2}, True),
])
def test_recap_names_only_hosts_with_a_problem(summary, worth):
    assert quiet.recap_problems(summary) is worth


def callback(verbosity):
    from ansible.plugins.loader import callback_loader

    plugin = callback_loader.get('azure_maintenance.scheduled_events.quiet')
    assert isinstance(plugin, quiet.CallbackModule)
    plugin._display = mock.MagicMock(verbosity=verbosity)
    plugin.set_options()
    return plugin


def task_result(action, result):
    # The attribute names of ansible-core 2.19's CallbackTaskResult.
    return mock.MagicMock(result=result, task=mock.MagicMock(action=action, loop=None), task_name='t')


def shown(plugin):
    return [call.args[0] for call in plugin._display.display.call_args_list]


def test_quiet_prints_messages_only():
    plugin = callback(0)
    plugin._handle_warnings_and_exception = lambda result: None
    plugin.v2_runner_on_ok(task_result('ansible.builtin.debug', {'msg': ['Freeze E1: seen'], 'changed': True}))
    plugin.v2_runner_on_ok(task_result('azure_maintenance.scheduled_events.scheduled_events_info', {'changed': False}))
    plugin.v2_runner_on_ok(task_result('ansible.builtin.lineinfile', {'changed': True}))
    plugin.v2_runner_retry(task_result('ansible.builtin.uri', {'retries': 5, 'attempts': 1}))
    assert shown(plugin) == ['Freeze E1: seen']
    assert plugin.get_option('display_ok_hosts') is False and plugin.get_option('display_skipped_hosts') is False


def test_verbose_is_the_default_output():
    plugin = callback(1)
    plugin._handle_warnings_and_exception = lambda result: None
    plugin._last_task_banner = 'x'
    plugin.v2_runner_retry(task_result('ansible.builtin.uri', {'retries': 5, 'attempts': 1}))
    assert any(line.startswith('FAILED - RETRYING') for line in shown(plugin))
    assert plugin.get_option('display_ok_hosts') is True


def play(name):
    return mock.MagicMock(get_name=mock.MagicMock(return_value=name), check_mode=False)


def banners(plugin):
    return [call.args[0] for call in plugin._display.banner.call_args_list]


def test_quiet_gives_a_play_that_goes_on_with_the_same_name_no_banner():
    plugin = callback(0)
    for name in ['Rolling Azure maintenance', 'Maintain, round after round', 'Maintain, round after round',
                 'Maintain, round after round', 'Report on the rolling Azure maintenance']:
        plugin.v2_playbook_on_play_start(play(name))
    assert banners(plugin) == ['PLAY [Rolling Azure maintenance]', 'PLAY [Maintain, round after round]',
                               'PLAY [Report on the rolling Azure maintenance]']


@pytest.mark.parametrize('verbosity, names, expected', [
    # -v shows every banner, as the default output does.
    (1, ['Maintain', 'Maintain'], ['PLAY [Maintain]', 'PLAY [Maintain]']),
    # Plays without a name are not taken for one another.
    (0, ['', ''], ['PLAY', 'PLAY']),
    # A name seen before, but not just before, is a new part of the playbook.
    (0, ['A', 'B', 'A'], ['PLAY [A]', 'PLAY [B]', 'PLAY [A]']),
])
def test_play_banners_the_quiet_output_keeps(verbosity, names, expected):
    plugin = callback(verbosity)
    for name in names:
        plugin.v2_playbook_on_play_start(play(name))
    assert banners(plugin) == expected
