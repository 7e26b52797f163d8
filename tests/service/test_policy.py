# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Approvals follow the ordered rules; asserted on the simulator's approval log."""

import calendar
import os
import time

from service_harness import approvals_of, wait_until

RULES = [
    {'name': 'user actions', 'event_sources': ['User'], 'action': 'approve'},
    {'name': 'short freezes', 'event_types': ['Freeze'], 'max_duration_seconds': 10, 'action': 'approve_after_prepare'},
    {'name': 'reboots wait', 'event_types': ['Reboot'], 'action': 'never'},
    {'name': 'redeploys', 'event_types': ['Redeploy'], 'action': 'approve_after_prepare', 'ignore_hook_failures': True},
]


def _approved_ids(simulator):
    return set(event_id.lower() for entry in simulator.approvals() if entry['status'] == 200
               for event_id in entry['event_ids'])


def _decision(daemon, event_id):
    # None until the daemon has recorded the event: the wait below polls this
    # while the daemon may still be between its first and second poll.
    return daemon.state().get('events', {}).get(event_id.lower(), {}).get('approval')


def test_ordered_rules_decide_each_event(simulator, daemon):
    daemon.add_hook('prepare', '10-ok')
    daemon.write_config(approval={'rules': RULES, 'default_action': 'never'})
    daemon.start()
    ids = {
        # The first matching rule wins: a User reboot is approved although reboots wait.
        'user_reboot': simulator.create_event('Reboot', ['WestNO_0'], event_source='User'),
        'short_freeze': simulator.create_event('Freeze', ['WestNO_0'], duration_seconds=5),
        'long_freeze': simulator.create_event('Freeze', ['WestNO_0'], duration_seconds=30),
        # -1 is an unknown duration: never "short".
        'unknown_freeze': simulator.create_event('Freeze', ['WestNO_0'], duration_seconds=-1),
        'platform_reboot': simulator.create_event('Reboot', ['WestNO_0']),
        'preempt': simulator.create_event('Preempt', ['WestNO_0']),
    }
    wanted = set([ids['user_reboot'].lower(), ids['short_freeze'].lower()])
    wait_until(lambda: _approved_ids(simulator) >= wanted, 10, what='approvals')
    wait_until(lambda: all(_decision(daemon, ids[name]) for name in ids), 10, what='decisions recorded')
    assert _approved_ids(simulator) == wanted
    assert _decision(daemon, ids['long_freeze'])[:2] == ['skip', 'default']
    assert _decision(daemon, ids['unknown_freeze'])[:2] == ['skip', 'default']
    assert _decision(daemon, ids['platform_reboot'])[:2] == ['skip', 'reboots wait']
    assert _decision(daemon, ids['preempt'])[:2] == ['skip', 'default']
    # Each approval is one POST naming the event; never repeated once accepted.
    time.sleep(1)
    assert len(approvals_of(simulator, ids['user_reboot'])) == 1
    assert len(approvals_of(simulator, ids['short_freeze'])) == 1
    assert daemon.stop() == 0


def test_approve_at_once_does_not_wait_for_prepare(simulator, daemon):
    daemon.add_hook('prepare', '10-slow', sleep_seconds=3)
    daemon.write_config(approval={'rules': RULES})
    daemon.start()
    event_id = simulator.create_event('Reboot', ['WestNO_0'], event_source='User')
    wait_until(lambda: approvals_of(simulator, event_id), 10, what='approval')
    ends = daemon.records('end')
    assert not ends, 'approval waited for the prepare hook'
    assert daemon.stop() == 0


def test_approval_after_prepare_goes_out_when_the_last_hook_exits(simulator, daemon):
    daemon.add_hook('prepare', '10-first', sleep_seconds=0.5)
    daemon.add_hook('prepare', '20-last', sleep_seconds=1)
    daemon.write_config(approval={'rules': RULES})
    daemon.start()
    event_id = simulator.create_event('Freeze', ['WestNO_0'], duration_seconds=5)
    entry = wait_until(lambda: approvals_of(simulator, event_id), 15, what='approval')[0]
    last_end = [record for record in daemon.records('end') if record['hook'] == 'prepare/20-last'][0]['ended']
    # The simulator logs real time as ISO 8601 UTC.
    approved = calendar.timegm(time.strptime(entry['real_time'][:19], '%Y-%m-%dT%H:%M:%S')) \
        + float('0.' + entry['real_time'][20:23])
    assert last_end <= approved + 0.01
    assert approved - last_end < 1.0
    assert daemon.stop() == 0


def test_failing_prepare_blocks_approval_until_not_before(simulator, daemon):
    daemon.add_hook('prepare', '10-ok')
    daemon.add_hook('prepare', '20-fails', exit_code=1)
    daemon.add_hook('started', '10-started')
    daemon.write_config(approval={'rules': RULES})
    daemon.start()
    event_id = simulator.create_event('Freeze', ['WestNO_0'], duration_seconds=5)
    wait_until(lambda: daemon.records('end') and len(daemon.records('end')) == 2, 10, what='prepare hooks')
    wait_until(lambda: _decision(daemon, event_id), 5, what='decision')
    time.sleep(1)
    assert approvals_of(simulator, event_id) == []
    assert _decision(daemon, event_id)[0] == 'skip' and 'failed' in _decision(daemon, event_id)[2]
    # NotBefore passes: the event starts anyway and the started hooks still run.
    simulator.advance_clock(901)
    daemon.wait_for_hooks(event_id, ['prepare/10-ok', 'prepare/20-fails', 'started/10-started'])
    assert approvals_of(simulator, event_id) == []
    assert daemon.stop() == 0


def test_timed_out_prepare_blocks_approval_and_rule_may_ignore_failures(simulator, daemon):
    daemon.add_hook('prepare', '10-hangs', sleep_seconds=30)
    daemon.write_config(approval={'rules': RULES}, hook_timeout=1)
    daemon.start()
    freeze_id = simulator.create_event('Freeze', ['WestNO_0'], duration_seconds=5)
    wait_until(lambda: [e for e in daemon.log_entries() if e.get('outcome') == 'timeout'], 15, what='hook timeout')
    # The hook was stopped, not left running: its end record never came.
    assert daemon.records('end') == []
    redeploy_id = simulator.create_event('Redeploy', ['WestNO_0'])
    wait_until(lambda: approvals_of(simulator, redeploy_id), 15, what='approval ignoring the failure')
    assert approvals_of(simulator, freeze_id) == []
    assert daemon.stop() == 0


def test_leader_only_approves_on_the_first_vm_of_resources(simulator, daemon_factory):
    follower = daemon_factory(vm_index=1, name='follower')
    follower.write_config(approval={'rules': [{'action': 'approve'}], 'leader_only': True})
    follower.start()
    led_by_other = simulator.create_event('Freeze', ['WestNO_0', 'WestNO_1'])
    led_by_me = simulator.create_event('Freeze', ['WestNO_1', 'WestNO_0'])
    wait_until(lambda: approvals_of(simulator, led_by_me), 10, what='leader approval')
    time.sleep(1)
    assert approvals_of(simulator, led_by_other) == []
    assert [entry['vm'] for entry in approvals_of(simulator, led_by_me)] == ['WestNO_1']
    # A rule can override the global leader_only.
    follower.stop()
    follower.write_config(approval={'rules': [{'action': 'approve', 'leader_only': False}], 'leader_only': True})
    follower.start()
    wait_until(lambda: approvals_of(simulator, led_by_other), 10, what='approval without leader rule')
    assert follower.stop() == 0


def test_insecure_hook_is_refused_at_run_time_and_blocks_approval(simulator, daemon):
    daemon.add_hook('prepare', '10-ok')
    daemon.write_config(approval={'rules': RULES})
    daemon.start()
    # Made writable by others after the daemon started: refused when its turn comes.
    os.chmod(daemon.add_hook('prepare', '20-tampered'), 0o777)
    event_id = simulator.create_event('Freeze', ['WestNO_0'], duration_seconds=5)
    failure = wait_until(lambda: [e for e in daemon.log_entries() if e.get('outcome') == 'refused'], 10,
                         what='refusal')[0]
    assert 'writable by group and others' in failure['message'] and 'chmod go-w' in failure['message']
    assert daemon.hook_calls(event_id) == ['prepare/10-ok']
    time.sleep(1)
    assert approvals_of(simulator, event_id) == []
    assert daemon.stop() == 0
