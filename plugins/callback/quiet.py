# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
name: quiet
type: stdout
short_description: One line per message, per-host results only when something fails
version_added: 0.1.0
author:
  - azure_maintenance.scheduled_events contributors (!UNKNOWN)
description:
  - A screen output for long runs over many hosts, such as C(azure_maintenance.scheduled_events.rolling_maintenance),
    whose own messages say what happened to each event at each step.
  - Without C(-v), a play named as the play before it (the rolling playbook's plays of rounds) gets no banner of its
    own, and the lines of C(debug) tasks are printed as they are, one line each, without a task banner; results
    that are C(ok), C(changed) or C(skipped), failures the play ignores (C(ignore_errors)), C(included) lines and
    C(FAILED - RETRYING) lines are not printed; other failed and unreachable results are printed in full under
    their task banner, as by the default output; the recap lists
    only the hosts that failed, were unreachable, or had a failure rescued or ignored, then one line for all hosts.
  - With C(-v) or more, the output is exactly that of the default callback.
  - Enable it with C(ANSIBLE_STDOUT_CALLBACK=azure_maintenance.scheduled_events.quiet), or with
    C(stdout_callback = azure_maintenance.scheduled_events.quiet) in the C([defaults]) section of C(ansible.cfg).
extends_documentation_fragment:
  - default_callback
  - result_format_callback
requirements:
  - set as stdout in configuration
'''

from ansible.plugins.callback.default import CallbackModule as DefaultCallback

# Actions whose result is a message for the reader.
_MESSAGE_ACTIONS = ('debug', 'ansible.builtin.debug', 'ansible.legacy.debug')


def _result_of(task_result):
    """The result dictionary, from ansible-core 2.19's CallbackTaskResult or an older TaskResult."""
    try:
        return task_result.result
    except AttributeError:
        return task_result._result  # pylint: disable=protected-access


def _task_of(task_result):
    try:
        return task_result.task
    except AttributeError:
        return task_result._task  # pylint: disable=protected-access


def message_lines(result):
    """The lines a debug result shows: its msg (a list gives one line each), else its var's value."""
    if 'msg' in result:
        message = result['msg']
    else:
        shown = [value for key, value in result.items() if not key.startswith('_') and key not in ('changed', 'failed')]
        message = shown[0] if len(shown) == 1 else shown
    if isinstance(message, (list, tuple)):
        return [str(line) for line in message]
    return str(message).splitlines() or ['']


def recap_problems(summary):
    """Whether a host's recap (``stats.summarize(host)``) is worth a line of its own."""
    return any(summary.get(key) for key in ('failures', 'unreachable', 'rescued', 'ignored'))


class CallbackModule(DefaultCallback):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'stdout'
    CALLBACK_NAME = 'azure_maintenance.scheduled_events.quiet'

    def _quiet(self):
        return self._display.verbosity < 1

    def get_option(self, k, *args, **kwargs):
        # Banners wait for a result worth showing, as with display_ok_hosts=false.
        if self._quiet() and k in ('display_ok_hosts', 'display_skipped_hosts'):
            return False
        return super(CallbackModule, self).get_option(k, *args, **kwargs)

    def v2_playbook_on_play_start(self, play):
        name = play.get_name().strip()
        if self._quiet() and name and name == getattr(self, '_last_play_banner', None):
            # A play that goes on with the work of the play before it, under
            # the same name (the rolling playbook runs its rounds in several
            # plays), gets no banner of its own.
            self._play = play
            return None
        self._last_play_banner = name
        return super(CallbackModule, self).v2_playbook_on_play_start(play)

    def v2_runner_on_ok(self, result):
        if not self._quiet():
            return super(CallbackModule, self).v2_runner_on_ok(result)
        task = _task_of(result)
        # Warnings are still said; the ok or changed line is not.
        self._say_warnings(result)
        if task.action in _MESSAGE_ACTIONS:
            for line in message_lines(_result_of(result)):
                self._display.display(line)
        return None

    def _say_warnings(self, result):
        # ansible-core 2.19's default callback has one method for a result's
        # warnings and exception; 2.16-2.18 say warnings from the result dict.
        if hasattr(self, '_handle_warnings_and_exception'):
            self._handle_warnings_and_exception(result)
        elif hasattr(self, '_handle_warnings'):
            self._handle_warnings(_result_of(result))

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if ignore_errors and self._quiet():
            # The play chose to go on; the recap counts it as ignored.
            return None
        return super(CallbackModule, self).v2_runner_on_failed(result, ignore_errors=ignore_errors)

    def v2_runner_item_on_ok(self, result):
        if not self._quiet():
            return super(CallbackModule, self).v2_runner_item_on_ok(result)
        return None

    def v2_runner_retry(self, result):
        if not self._quiet():
            return super(CallbackModule, self).v2_runner_retry(result)
        return None

    def v2_playbook_on_include(self, included_file):
        if not self._quiet():
            return super(CallbackModule, self).v2_playbook_on_include(included_file)
        return None

    def v2_playbook_on_stats(self, stats):
        if not self._quiet():
            return super(CallbackModule, self).v2_playbook_on_stats(stats)
        self._display.banner('PLAY RECAP')
        hosts = sorted(stats.processed.keys())
        totals = dict((key, 0) for key in ('ok', 'changed', 'unreachable', 'failures', 'skipped', 'rescued',
                                           'ignored'))
        for host in hosts:
            summary = stats.summarize(host)
            for key in totals:
                totals[key] += summary.get(key, 0)
            if recap_problems(summary):
                self._display.display('%s : ok=%d changed=%d unreachable=%d failed=%d skipped=%d rescued=%d ignored=%d'
                                      % (host, summary['ok'], summary['changed'], summary['unreachable'],
                                         summary['failures'], summary['skipped'], summary['rescued'],
                                         summary['ignored']))
        self._display.display('%d host(s) : ok=%d changed=%d unreachable=%d failed=%d skipped=%d rescued=%d ignored=%d'
                              % (len(hosts), totals['ok'], totals['changed'], totals['unreachable'],
                                 totals['failures'], totals['skipped'], totals['rescued'], totals['ignored']))
        self._display.display('', screen_only=True)
        return None
