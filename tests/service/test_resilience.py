# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Restarts at bad moments and IMDS trouble: nothing repeated, nothing forgotten."""

import os
import signal
import time

from service_harness import approvals_of, unused_loopback_url, wait_until

NEVER = {'rules': [], 'default_action': 'never'}


def test_sigkill_between_prepare_and_start_neither_repeats_prepare_nor_misses_recover(simulator, daemon):
    daemon.add_recording_hooks(names=('10-only',))
    daemon.write_config(approval=NEVER)
    daemon.start()
    event_id = simulator.create_event('Reboot', ['WestNO_0'])
    daemon.wait_for_hooks(event_id, ['prepare/10-only'])
    wait_until(lambda: daemon.records('end'), 10, what='prepare finished')
    wait_until(lambda: daemon.state()['events'][event_id.lower()]['phases']['prepare'].get('finished'), 10,
               what='prepare saved')
    daemon.kill()

    daemon.start()
    time.sleep(1.5)
    assert daemon.hook_calls(event_id) == ['prepare/10-only']
    simulator.start_event(event_id)
    daemon.wait_for_hooks(event_id, ['prepare/10-only', 'started/10-only'])
    wait_until(lambda: len(daemon.records('end')) == 2, 10, what='started hook finished')
    daemon.kill()

    # Gone while the service was down: recover still runs after the restart.
    simulator.advance_clock(700)
    wait_until(lambda: simulator.event(event_id)['finished_at'], 5, what='event removed')
    daemon.start()
    daemon.wait_for_hooks(event_id, ['prepare/10-only', 'started/10-only', 'recover/10-only'])
    time.sleep(1)
    assert daemon.hook_calls(event_id) == ['prepare/10-only', 'started/10-only', 'recover/10-only']
    assert daemon.stop() == 0


def test_sigkill_during_a_prepare_hook_does_not_run_it_again(simulator, daemon):
    daemon.add_hook('prepare', '10-slow', sleep_seconds=5)
    daemon.add_hook('prepare', '20-next')
    daemon.add_hook('recover', '10-recover', sleep_seconds=3)
    daemon.add_hook('recover', '20-recover')
    daemon.write_config(approval={'rules': [{'action': 'approve_after_prepare'}]})
    daemon.start()
    event_id = simulator.create_event('Freeze', ['WestNO_0'], duration_seconds=5)
    daemon.wait_for_hooks(event_id, ['prepare/10-slow'])
    daemon.kill()
    daemon.start()
    daemon.wait_for_hooks(event_id, ['prepare/10-slow', 'prepare/20-next'])
    interrupted = wait_until(lambda: [e for e in daemon.log_entries() if e.get('outcome') == 'interrupted'], 10,
                             what='interrupted hook reported')
    assert interrupted[0]['hook'] == '10-slow'
    # Nobody knows how the interrupted hook ended: no approval on its account.
    time.sleep(1)
    assert approvals_of(simulator, event_id) == []

    # Killed during recover: an interrupted recover hook runs again.
    simulator.cancel_event(event_id)
    daemon.wait_for_hooks(event_id, ['prepare/10-slow', 'prepare/20-next', 'recover/10-recover'])
    daemon.kill()
    daemon.start()
    daemon.wait_for_hooks(event_id, ['prepare/10-slow', 'prepare/20-next', 'recover/10-recover', 'recover/10-recover'])
    assert daemon.stop() == 0


def test_faults_are_survived(simulator, daemon):
    daemon.add_hook('prepare', '10-only')
    daemon.write_config(approval={'rules': [{'action': 'approve'}]}, timeout=1)
    daemon.start()
    faults = [
        {'kind': 'status', 'status': 500, 'count': 3},
        {'kind': 'status', 'status': 503, 'count': 1},
        {'kind': 'status', 'status': 410, 'count': 2},
        {'kind': 'malformed', 'count': 2},
        {'kind': 'reset', 'count': 2},
        {'kind': 'delay', 'delay_seconds': 2, 'count': 1},
        {'kind': 'redirect', 'status': 307, 'location': 'http://127.0.0.1:9/elsewhere', 'count': 1},
    ]
    for fault in faults:
        simulator.add_fault(vm='WestNO_0', path='scheduledevents', method='GET', **fault)
    event_id = simulator.create_event('Freeze', ['WestNO_0'])
    daemon.wait_for_hooks(event_id, ['prepare/10-only'], timeout=60)
    wait_until(lambda: approvals_of(simulator, event_id), 20, what='approval after faults')
    wait_until(lambda: simulator.faults() == [], 20, what='every fault consumed')
    kinds = set(e.get('error_kind') for e in daemon.log_entries() if e.get('error_kind'))
    assert kinds, 'no poll error was logged'
    assert daemon.process.poll() is None
    assert daemon.stop() == 0


def test_approval_refused_once_is_retried(simulator, daemon):
    daemon.write_config(approval={'rules': [{'action': 'approve'}]})
    daemon.start()
    simulator.add_fault(vm='WestNO_0', path='scheduledevents', method='POST', kind='status', status=500, count=1)
    event_id = simulator.create_event('Freeze', ['WestNO_0'])
    wait_until(lambda: [entry for entry in approvals_of(simulator, event_id) if entry['status'] == 200] or
               [e for e in daemon.log_entries() if e.get('kind') == 'approved'], 10, what='approval')
    assert [e for e in daemon.log_entries() if e.get('kind') == 'approval_failed']
    wait_until(lambda: [e for e in daemon.log_entries() if e.get('kind') == 'approved'], 10, what='approved logged')
    assert daemon.stop() == 0


def test_throttling_is_survived(simulator, daemon):
    daemon.add_hook('prepare', '10-only')
    daemon.write_config(metrics={'textfile': daemon.base_dir + '/m.prom', 'textfile_interval': 1})
    simulator.set_throttle(enabled=True, per_second=1)
    daemon.start()
    wait_until(lambda: [e for e in daemon.log_entries() if e.get('error_kind') == 'http_429'], 10, what='a 429')
    event_id = simulator.create_event('Freeze', ['WestNO_0'])
    daemon.wait_for_hooks(event_id, ['prepare/10-only'], timeout=20)
    simulator.set_throttle(enabled=False)
    assert daemon.stop() == 0
    with open(daemon.base_dir + '/m.prom') as handle:
        text = handle.read()
    assert 'scheduled_events_service_poll_errors_total{kind="http_429"}' in text


def test_incarnation_reset_after_disable_is_survived(simulator, daemon):
    daemon.add_recording_hooks(names=('10-only',))
    daemon.write_config(approval=NEVER)
    daemon.start()
    first = simulator.create_event('Freeze', ['WestNO_0'])
    second = simulator.create_event('Reboot', ['WestNO_0'])
    daemon.wait_for_hooks(first, ['prepare/10-only'])
    daemon.wait_for_hooks(second, ['prepare/10-only'])
    before = daemon.state()['document_incarnation']
    assert before >= 3
    simulator.disable_vm('WestNO_0')
    reset = wait_until(lambda: [e for e in daemon.log_entries() if e.get('kind') == 'incarnation_reset'], 10,
                       what='incarnation reset noticed')[0]
    assert reset['previous_incarnation'] == before and reset['document_incarnation'] < before
    third = simulator.create_event('Redeploy', ['WestNO_0'])
    daemon.wait_for_hooks(third, ['prepare/10-only'])
    simulator.cancel_event(first)
    daemon.wait_for_hooks(first, ['prepare/10-only', 'recover/10-only'])
    time.sleep(1)
    assert daemon.hook_calls(second) == ['prepare/10-only']
    assert daemon.process.poll() is None
    assert daemon.stop() == 0


def test_unreachable_imds_is_logged_and_polling_goes_on(simulator, daemon):
    daemon.write_config(endpoint=unused_loopback_url(), resource_name='WestNO_0')
    daemon.start()
    wait_until(lambda: [e for e in daemon.log_entries() if e.get('error_kind') == 'unreachable'], 10,
               what='unreachable logged')
    time.sleep(1)
    assert daemon.process.poll() is None
    assert daemon.stop(signal.SIGINT) == 0


def test_unreadable_state_is_set_aside_and_the_service_starts_afresh(simulator, daemon):
    daemon.add_hook('prepare', '10-only')
    daemon.write_config()
    os.makedirs(os.path.dirname(daemon.state_file))
    with open(daemon.state_file, 'w') as handle:
        handle.write('{"version": 1, "events": ')
    daemon.start()
    warning = wait_until(lambda: [e for e in daemon.log_entries() if 'could not be read' in e['message']], 10,
                         what='warning about the state file')[0]
    assert warning['level'] == 'warning'
    assert [name for name in os.listdir(os.path.dirname(daemon.state_file)) if '.corrupt.' in name]
    event_id = simulator.create_event('Freeze', ['WestNO_0'])
    daemon.wait_for_hooks(event_id, ['prepare/10-only'])
    assert daemon.stop() == 0
    assert daemon.state()['version'] == 1


def test_the_end_of_a_prepare_phase_is_saved_while_imds_fails(simulator, daemon):
    daemon.add_hook('prepare', '10-slow', sleep_seconds=1)
    daemon.write_config(approval=NEVER, resource_name='WestNO_0')
    daemon.start()
    event_id = simulator.create_event('Freeze', ['WestNO_0'])
    wait_until(lambda: daemon.records('start'), 15, what='prepare hook start')
    # Every poll fails from now on: the phase's end must still reach the disk.
    simulator.add_fault('status', vm='WestNO_0', path='scheduledevents', status=500, count=100000)
    wait_until(lambda: daemon.state()['events'][event_id.lower()]['phases'].get('prepare', {}).get('finished'), 15,
               what='prepare phase saved as finished')
    assert daemon.stop() == 0


def test_a_recover_hook_stopped_by_a_second_sigterm_runs_again_at_the_next_start(simulator, daemon):
    daemon.add_hook('recover', '10-recover', sleep_seconds=60)
    daemon.write_config(approval=NEVER)
    daemon.start()
    event_id = simulator.create_event('Freeze', ['WestNO_0'])
    wait_until(lambda: event_id.lower() in daemon.state().get('events', {}), 15, what='the event saved')
    simulator.cancel_event(event_id)
    daemon.wait_for_hooks(event_id, ['recover/10-recover'])
    # The first SIGTERM waits for the running hook; the second ends it at once.
    daemon.send_signal(signal.SIGTERM)
    wait_until(lambda: daemon.log_contains('stopping: waiting for the running recover hook'), 10,
               what='the stop waiting for the hook')
    assert daemon.stop(signal.SIGTERM, timeout=20) == 0
    daemon.start()
    daemon.wait_for_hooks(event_id, ['recover/10-recover', 'recover/10-recover'])
    assert daemon.stop(signal.SIGKILL) is not None


def test_prepare_hooks_due_before_a_restart_wait_for_the_first_poll(simulator, daemon):
    # The second event's prepare is due behind the first's slow hook when the service is killed.
    daemon.add_hook('prepare', '10-slow', sleep_seconds=60)
    daemon.write_config(approval=NEVER)
    daemon.start()
    first = simulator.create_event('Freeze', ['WestNO_0'])
    daemon.wait_for_hooks(first, ['prepare/10-slow'])
    second = simulator.create_event('Reboot', ['WestNO_0'])
    wait_until(lambda: daemon.state().get('events', {}).get(second.lower(), {}).get('due') == ['prepare'], 15,
               what='the second event saved with its prepare due')
    daemon.kill()
    # Meanwhile Azure cancels the second event and starts the first. The first
    # read after the restart is slow, which leaves the hook runner time to
    # act on the saved state before it, were it to.
    simulator.cancel_event(second)
    simulator.start_event(first)
    simulator.add_fault('delay', vm='WestNO_0', path='scheduledevents', method='GET', delay_seconds=3)
    daemon.start()
    # The first poll shows the second event gone: its prepare never runs.
    wait_until(lambda: not daemon.state()['events'].get(second.lower(), {}).get('due'), 30,
               what='the second event handled after the restart')
    assert daemon.hook_calls(second) == []
    assert daemon.stop(signal.SIGKILL) is not None
