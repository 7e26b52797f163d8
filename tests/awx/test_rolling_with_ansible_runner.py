# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rolling playbook as AWX / Automation Controller runs it: through
ansible-runner, from a private data dir holding a project, an inventory and
env/extravars, with the collection playbook imported by FQCN from a project
playbook. Checks the job events runner emits and the simulator's log."""

import json
import os
import shutil
import sys

import pytest

from stage.rolling_stage import (
    ANSIBLE_TEST_CONFIG,
    FREEZE_WEB_UD0,
    HARDWARE_FAILURE,
    RollingStage,
    collections_path,
    maintenance_scenario,
)

ansible_runner = pytest.importorskip('ansible_runner')

PROJECT_PLAYBOOK = """---
# What a job template of an AWX project points at.
- name: Rolling maintenance from the collection
  ansible.builtin.import_playbook: azure_maintenance.scheduled_events.rolling_maintenance
"""


def private_data_dir(root, stage):
    """project/, inventory/hosts, env/extravars, env/envvars, env/settings: runner's layout."""
    for name in ('project', 'inventory', 'env'):
        os.makedirs(os.path.join(root, name), exist_ok=True)
    with open(os.path.join(root, 'project', 'rolling.yml'), 'w') as handle:
        handle.write(PROJECT_PLAYBOOK)
    stage.write_inventory(os.path.join(root, 'inventory', 'hosts.json'))
    extra = stage.extra_vars(rolling_settle_seconds=3)
    with open(os.path.join(root, 'env', 'extravars'), 'w') as handle:
        json.dump(extra, handle)
    envvars = {'ANSIBLE_CONFIG': ANSIBLE_TEST_CONFIG, 'ANSIBLE_COLLECTIONS_PATH': collections_path(root),
               'ANSIBLE_FORKS': '16', 'ANSIBLE_HOST_KEY_CHECKING': 'False', 'ANSIBLE_PYTHON_INTERPRETER': sys.executable}
    with open(os.path.join(root, 'env', 'envvars'), 'w') as handle:
        json.dump(envvars, handle)
    with open(os.path.join(root, 'env', 'settings'), 'w') as handle:
        json.dump({'job_timeout': 600, 'suppress_ansible_output': True}, handle)
    return extra


def test_runner_job_events_and_simulator_log(tmp_path, monkeypatch):
    monkeypatch.setenv('PATH', os.path.dirname(sys.executable) + os.pathsep + os.environ.get('PATH', ''))
    root = str(tmp_path / 'job')
    # A loopback address of its own, so this test never meets the e2e stage.
    with RollingStage(str(tmp_path), address='127.0.0.2', with_haproxy=False) as stage:
        steps = [step for step in maintenance_scenario() if step['label'] in ('web_ud0', 'hardware_failure')]
        extra = private_data_dir(root, stage)
        stage.start_scenario(steps)
        # The clock is held when the hardware failure appears Started, until
        # web_5 has read it, so the job sees it however long its rounds take.
        runner = stage.run_pacing_clock(
            lambda: ansible_runner.run(private_data_dir=root, playbook='rolling.yml', quiet=True))
        events = list(runner.events)
        approvals = [approval for approval in stage.control.approvals() if approval['status'] == 200]
        world_events = dict((event['id'], event) for event in stage.control.state()['events'])

    assert runner.status == 'successful', (runner.rc, runner.stdout.read()[-3000:])
    assert runner.rc == 0
    stats = [event for event in events if event['event'] == 'playbook_on_stats'][0]['event_data']
    assert stats['failures'] == {} and stats['dark'] == {}
    # The approval task ran once, on the event's leader, and changed something there only.
    approvals_done = [event for event in events if event['event'] == 'runner_on_ok'
                      and event['event_data']['task'] == 'Approve the events once']
    assert [event['event_data']['host'] for event in approvals_done] == ['web0']
    assert approvals_done[0]['event_data']['res']['approved'] == [FREEZE_WEB_UD0]
    # The planner's lines named both events, the hardware failure as seen already Started.
    lines = [line for event in events if event['event'] == 'runner_on_ok'
             and event['event_data']['task'] == 'Say what changed'
             for line in event['event_data']['res']['msg']]
    assert any(HARDWARE_FAILURE in line and 'seen Started' in line for line in lines), lines
    assert any(FREEZE_WEB_UD0 in line and 'approving -> awaiting_start' in line for line in lines), lines
    # The simulator saw exactly one approval, for the Freeze; the hardware failure needs none.
    assert [(approval['vm'], approval['event_ids']) for approval in approvals] == [('web_0', [FREEZE_WEB_UD0])]
    assert world_events[FREEZE_WEB_UD0]['approvals'][0]['status_then'] == 'Scheduled'
    # The report landed where the extravars said.
    reports = os.listdir(extra['rolling_report_dir'])
    assert any(name.endswith('.html') for name in reports) and any(name.endswith('.json') for name in reports)
    shutil.rmtree(root, ignore_errors=True)
