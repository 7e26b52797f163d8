# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""rolling_report: the JSON and HTML report of a rolling maintenance run, written on the controller, no module."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import stat

import pytest

from ansible.errors import AnsibleActionFail

from ansible_collections.azure_maintenance.scheduled_events.plugins.action.rolling_report import (
    report_html, write_report,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._rolling import build_report
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._rolling_controller import (
    new_state,
)

from controller_task_harness import controller_task

NAME = 'rolling-maintenance-20261126T201500Z'


def sample_report(hosts=('web-0',)):
    """A report as the rolling_report filter makes it: one Freeze approved and done."""
    state = new_state()
    started = 1767225600.0
    state['events']['A1'] = {
        'event_id': 'A1', 'event_type': 'Freeze', 'event_source': 'Platform', 'hosts': list(hosts),
        'resources': ['vm-0'], 'state': 'gone', 'outcome': 'approved', 'status_when_seen': 'Scheduled',
        'foreign_resources': [], 'changes': [], 'warnings': [], 'errors': [],
        'times': {'seen': started + 5, 'drained': started + 10, 'approved': started + 12, 'started': started + 15,
                  'impact_over': started + 20, 'verified': started + 25, 'undrained': started + 30,
                  'gone': started + 60},
    }
    return build_report(state, {'started': started, 'finished': started + 90, 'maintenance_groups': ['web'],
                                'stop_reason': 'nothing pending', 'rounds': 12, 'approve': True,
                                'check_mode': False})


def test_both_files_are_written_whole_and_the_json_reads_back_as_the_report(tmp_path):
    report = sample_report()
    folder = tmp_path / 'reports' / 'nested'
    result = write_report(report, str(folder), NAME)
    assert result == {'changed': True, 'json': str(folder / (NAME + '.json')), 'html': str(folder / (NAME + '.html'))}
    assert json.loads((folder / (NAME + '.json')).read_text(encoding='utf-8')) == json.loads(json.dumps(report))
    page = (folder / (NAME + '.html')).read_text(encoding='utf-8')
    assert page.startswith('<!DOCTYPE html>') and page.endswith('</html>\n')
    assert report['run']['summary'] in page and 'A1' in page
    # Nothing but the two files: the temporary files they were written to are renamed, not left behind.
    assert sorted(os.listdir(str(folder))) == [NAME + '.html', NAME + '.json']
    for kind in ('json', 'html'):
        assert stat.S_IMODE(os.stat(result[kind]).st_mode) == 0o644


def test_a_report_written_again_under_the_same_name_replaces_the_old_one(tmp_path):
    write_report(sample_report(('web-0',)), str(tmp_path), NAME)
    write_report(sample_report(('web-9',)), str(tmp_path), NAME)
    assert 'web-9' in (tmp_path / (NAME + '.html')).read_text(encoding='utf-8')
    assert sorted(os.listdir(str(tmp_path))) == [NAME + '.html', NAME + '.json']


def test_what_the_report_holds_is_escaped_in_the_page():
    """Host names and reasons come from the inventory and from IMDS: they are text on the page, never markup."""
    page = report_html(sample_report(('<script>alert(1)</script>',)))
    assert '<script>' not in page and '&lt;script&gt;alert(1)&lt;/script&gt;' in page


def test_check_mode_writes_nothing_and_says_where_it_would(tmp_path):
    result = write_report(sample_report(), str(tmp_path / 'reports'), NAME, check_mode=True)
    assert result['changed'] is True and result['json'].endswith(NAME + '.json')
    assert not (tmp_path / 'reports').exists()


def test_a_folder_that_cannot_be_written_fails_with_what_to_do(tmp_path):
    blocker = tmp_path / 'reports'
    blocker.write_text('a file where the folder should be', encoding='utf-8')
    with pytest.raises(AnsibleActionFail) as failure:
        write_report(sample_report(), str(blocker), NAME)
    assert 'Cannot write the rolling maintenance report to %s' % blocker in str(failure.value)
    assert 'Set rolling_report_dir' in str(failure.value)


@pytest.mark.parametrize('name', ['', 'reports/run', '..'])
def test_a_name_that_is_not_a_file_name_is_refused(tmp_path, name):
    with pytest.raises(AnsibleActionFail, match='name must be a file name'):
        write_report(sample_report(), str(tmp_path), name)
    assert os.listdir(str(tmp_path)) == []


def test_a_report_the_page_cannot_be_drawn_from_leaves_no_half_behind(tmp_path):
    with pytest.raises(AnsibleActionFail, match='pass the result of the azure_maintenance.scheduled_events.rolling_report'):
        write_report({'events': []}, str(tmp_path / 'reports'), NAME)
    assert not (tmp_path / 'reports').exists()


def action(args, check_mode=False):
    return controller_task('rolling_report', args, check_mode)


def test_the_action_writes_in_this_process_and_runs_no_module(tmp_path, monkeypatch):
    plugin = action({'report': sample_report(), 'dir': str(tmp_path), 'name': NAME})

    def no_module(*args, **kwargs):
        raise AssertionError('rolling_report ran a module: %r %r' % (args, kwargs))

    monkeypatch.setattr(plugin, '_execute_module', no_module)
    result = plugin.run(task_vars={})
    assert result.get('failed') is not True, result
    assert result['changed'] is True and os.path.isfile(result['html'])


@pytest.mark.parametrize('args, message', [
    ({'dir': '/tmp', 'name': NAME}, 'missing required arguments: report'),
    ({'report': {}, 'dir': '/tmp', 'name': NAME, 'format': 'pdf'}, 'format. Supported parameters include'),
])
def test_bad_arguments_fail_the_task_and_say_which(args, message):
    result = action(args).run(task_vars={})
    assert result['failed'] is True
    assert message in result['msg'] and 'rolling_report' in result['msg']
