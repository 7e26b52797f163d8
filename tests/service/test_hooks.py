# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Hooks fire in order, once per phase, with the event's data on stdin and in the environment."""

import pytest

from service_harness import wait_until

ALL_PHASES = ['%s/%s' % (phase, name) for phase in ('prepare', 'started', 'recover')
              for name in ('10-first', '20-second')]


def _one_per_phase(daemon, event_id):
    return dict((record['hook'], record) for record in daemon.records()
                if record['env']['SE_EVENT_ID'].lower() == event_id.lower())


@pytest.mark.parametrize('event_type, event_source, duration', [
    ('Freeze', 'Platform', 5),
    ('Reboot', 'Platform', -1),
    ('Redeploy', 'Platform', -1),
    ('Preempt', 'Platform', -1),
    ('Terminate', 'Platform', -1),
    ('Reboot', 'User', -1),
])
def test_every_phase_runs_in_order_with_the_event_data(simulator, daemon, event_type, event_source, duration):
    daemon.add_recording_hooks()
    daemon.write_config(approval={'rules': [{'action': 'approve_after_prepare'}]})
    daemon.start()
    event_id = simulator.create_event(event_type, ['WestNO_0', 'WestNO_1'], event_source=event_source,
                                      duration_seconds=duration, not_before_seconds=600)
    daemon.wait_for_hooks(event_id, ALL_PHASES[:4])
    simulator.advance_clock(700)
    daemon.wait_for_hooks(event_id, ALL_PHASES)

    # One run each, in lexical order, phase after phase, never overlapping.
    assert daemon.hook_calls(event_id) == ALL_PHASES
    ends = dict((record['hook'], record['ended']) for record in daemon.records('end'))
    starts = [record['started'] for record in daemon.records()]
    for position, hook in enumerate(ALL_PHASES[:-1]):
        assert ends[hook] <= starts[position + 1]

    calls = _one_per_phase(daemon, event_id)
    prepare = calls['prepare/10-first']
    # Marks every process of this hook run, so that the timeout finds those that left its process group.
    assert len(prepare['env'].pop('SE_HOOK_RUN_TOKEN')) == 32
    assert prepare['env'] == {
        'SE_PHASE': 'prepare', 'SE_EVENT_ID': event_id, 'SE_EVENT_TYPE': event_type, 'SE_EVENT_STATUS': 'Scheduled',
        'SE_EVENT_SOURCE': event_source, 'SE_RESOURCE_TYPE': 'VirtualMachine',
        'SE_NOT_BEFORE': prepare['stdin']['event']['not_before'],
        'SE_NOT_BEFORE_RAW': prepare['stdin']['event']['not_before_raw'],
        'SE_DURATION_SECONDS': str(duration), 'SE_DESCRIPTION': prepare['stdin']['event']['description'],
        'SE_RESOURCES': 'WestNO_0,WestNO_1', 'SE_RESOURCE_NAME': 'WestNO_0', 'SE_IS_LEADER': 'true',
        'SE_AFFECTS_THIS_VM': 'true', 'SE_DOCUMENT_INCARNATION': str(prepare['stdin']['document_incarnation']),
        'SE_TRUNCATED': '',
    }
    assert prepare['env']['SE_NOT_BEFORE'].endswith('Z') and prepare['env']['SE_NOT_BEFORE_RAW'].endswith(' GMT')
    stdin = prepare['stdin']
    assert stdin['phase'] == 'prepare' and stdin['resource_name'] == 'WestNO_0' and stdin['is_leader'] is True
    assert stdin['event']['event_id'] == event_id and stdin['event']['event_type'] == event_type
    assert stdin['event']['duration_in_seconds'] == duration and stdin['event']['resources'] == ['WestNO_0', 'WestNO_1']
    assert 0 < stdin['event']['seconds_until_not_before'] <= 600

    started = calls['started/10-first']
    assert started['env']['SE_PHASE'] == 'started' and started['env']['SE_EVENT_STATUS'] == 'Started'
    assert started['env']['SE_NOT_BEFORE'] == '' and started['stdin']['event']['not_before_raw'] == ''
    recover = calls['recover/20-second']
    assert recover['env']['SE_PHASE'] == 'recover' and recover['stdin']['phase'] == 'recover'
    assert int(recover['env']['SE_DOCUMENT_INCARNATION']) > int(prepare['env']['SE_DOCUMENT_INCARNATION'])
    assert daemon.stop() == 0


def test_hardware_failure_skips_prepare_but_gets_started_and_recover(simulator, daemon):
    daemon.add_recording_hooks()
    daemon.start()
    event_id = simulator.create_event('Reboot', ['WestNO_0'], hardware_failure=True, linger_seconds=30)
    daemon.wait_for_hooks(event_id, ['started/10-first', 'started/20-second'])
    simulator.advance_clock(60)
    daemon.wait_for_hooks(event_id, ['started/10-first', 'started/20-second', 'recover/10-first', 'recover/20-second'])
    assert daemon.hook_calls(event_id) == ['started/10-first', 'started/20-second', 'recover/10-first',
                                           'recover/20-second']
    assert daemon.stop() == 0


def test_cancelled_event_gets_recover_without_started(simulator, daemon):
    daemon.add_recording_hooks(names=('10-only',))
    daemon.start()
    event_id = simulator.create_event('Redeploy', ['WestNO_0'])
    daemon.wait_for_hooks(event_id, ['prepare/10-only'])
    simulator.cancel_event(event_id)
    daemon.wait_for_hooks(event_id, ['prepare/10-only', 'recover/10-only'])
    assert daemon.hook_calls(event_id) == ['prepare/10-only', 'recover/10-only']
    assert daemon.stop() == 0


def test_events_for_other_vms_are_logged_without_hooks_unless_asked(simulator, daemon_factory):
    quiet = daemon_factory(name='quiet')
    quiet.add_recording_hooks(names=('10-only',))
    quiet.start()
    event_id = simulator.create_event('Freeze', ['WestNO_1'])
    wait_until(lambda: quiet.log_contains('does not list this VM'), 10, what='log of the foreign event')
    entry = [e for e in quiet.log_entries() if e.get('kind') == 'new'][0]
    assert entry['event_id'] == event_id and entry['affects_this_vm'] is False
    simulator.advance_clock(1000)
    wait_until(lambda: [e for e in quiet.log_entries() if e.get('kind') == 'started'], 10, what='start logged')
    simulator.advance_clock(700)
    wait_until(lambda: [e for e in quiet.log_entries() if e.get('kind') == 'removed'], 10, what='removal logged')
    assert quiet.hook_calls() == []
    assert simulator.approvals() == []
    assert quiet.stop() == 0

    curious = daemon_factory(name='curious')
    curious.add_recording_hooks(names=('10-only',))
    curious.write_config(hooks_for_other_vms=True, approval={'rules': [{'action': 'approve'}]})
    curious.start()
    other_id = simulator.create_event('Freeze', ['WestNO_1'])
    calls = curious.wait_for_hooks(other_id, ['prepare/10-only'])
    record = curious.records()[0]
    assert record['env']['SE_AFFECTS_THIS_VM'] == 'false' and record['env']['SE_IS_LEADER'] == 'false'
    assert calls == ['prepare/10-only']
    # Hooks for another VM's event never mean approving it for that VM.
    assert simulator.approvals() == []
    assert curious.stop() == 0


def test_hook_output_and_exit_status_are_logged(simulator, daemon):
    daemon.add_hook('prepare', '10-fails', recording_hook_failing())
    daemon.start()
    event_id = simulator.create_event('Freeze', ['WestNO_0'])
    wait_until(lambda: [e for e in daemon.log_entries() if e.get('kind') == 'hook_failed'], 10, what='hook failure')
    failure = [e for e in daemon.log_entries() if e.get('kind') == 'hook_failed'][0]
    assert failure['event_id'] == event_id and failure['exit_code'] == 3 and failure['hook'] == '10-fails'
    assert any(e['message'] == 'prepare/10-fails: something went wrong' for e in daemon.log_entries())
    state = daemon.state()
    result = state['events'][event_id.lower()]['phases']['prepare']['results']['10-fails']
    assert result['outcome'] == 'failed' and result['exit_code'] == 3
    assert daemon.stop() == 0


def recording_hook_failing():
    return '#!/bin/sh\necho "something went wrong"\nexit 3\n'


# Faults on the identity lookup that outlast any test.
UNTIL_CLEARED = 100000


def test_while_the_vm_name_is_unknown_hooks_and_metrics_say_unknown_not_no(simulator, daemon):
    simulator.add_fault('status', vm='WestNO_0', path='compute', status=500, count=UNTIL_CLEARED)
    textfile = daemon.base_dir + '/metrics.prom'
    daemon.add_hook('prepare', '10-first')
    daemon.write_config(approval={'rules': [{'action': 'approve'}]}, metrics={'textfile': textfile, 'textfile_interval': 1})
    daemon.start()
    event_id = simulator.create_event('Freeze', ['WestNO_0'])
    record = daemon.wait_for_hooks(event_id, ['prepare/10-first']) and daemon.records()[0]
    # Possibly this VM's event: null on stdin, "unknown" in the environment - never false.
    assert record['stdin']['resource_name'] is None
    assert record['stdin']['affects_this_vm'] is None and record['stdin']['is_leader'] is None
    assert record['stdin']['event']['affects_this_vm'] is None and record['stdin']['event']['is_leader'] is None
    assert record['env']['SE_AFFECTS_THIS_VM'] == 'unknown' and record['env']['SE_IS_LEADER'] == 'unknown'
    wait_until(lambda: 'scheduled_events_service_pending_events{affects_this_vm="unknown"} 1'
               in open(textfile).read().splitlines(), 15, what='pending events counted as unknown')
    text = open(textfile).read()
    assert 'scheduled_events_service_pending_events{affects_this_vm="false"} 0' in text.splitlines()
    assert 'events_seen_total{affects_this_vm="unknown",event_status="Scheduled",event_type="Freeze"} 1' in text
    assert simulator.approvals() == []  # approval waits for the name
    simulator.clear_faults()
    wait_until(simulator.approvals, 15, what='approval once the name is known')
    assert daemon.stop() == 0
