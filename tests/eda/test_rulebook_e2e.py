# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shipped rulebooks run by a real ansible-rulebook against the IMDS simulator.

The source is loaded by its FQCN from a collections directory, as from an
installed collection; approvals are checked in the simulator's approval log.
Needs ansible-rulebook (pip) and a Java 17 runtime (installed with apt-get
when missing and running as root). Takes about half a minute.
"""

import json
import os
import time
import uuid

import pytest

from eda_harness import HarnessError, Rulebook, Simulator, ensure_java, local_inventory, make_collection_tree
from eda_harness import RECORDING_ROLLING_PLAYBOOK, rulebook_command, wait_until

# Bounds: the JVM and ansible-rulebook start in a few seconds here, a playbook
# run in one or two; generous limits keep a slow CI machine from failing.
STARTUP_TIMEOUT = 120.0
ACTION_TIMEOUT = 90.0
QUIET_SECONDS = 4.0


def new_event_id():
    return str(uuid.uuid4()).upper()


@pytest.fixture(scope='module')
def e2e(tmp_path_factory):
    try:
        ensure_java()
        rulebook_command()
    except HarnessError as exc:
        pytest.fail(str(exc))
    work = tmp_path_factory.mktemp('eda-e2e')
    collections_parent = str(work / 'collections')
    collection = make_collection_tree(collections_parent, {'rolling_maintenance.yml': RECORDING_ROLLING_PLAYBOOK})
    with Simulator(str(work)) as simulator:
        yield {'work': str(work), 'collections': collections_parent, 'collection': collection, 'simulator': simulator}


def start_rulebook(e2e, rulebook, variables, inventory_hosts, name, group_vars=None):
    simulator = e2e['simulator']
    simulator.reset()
    variables = dict({
        'azure_scheduled_events_endpoint': simulator.endpoint('WestNO_0'),
        'scheduled_events_approve_playbook': os.path.join(e2e['collection'], 'extensions', 'eda', 'playbooks',
                                                          'approve_event.yml'),
    }, **variables)
    inventory = local_inventory(inventory_hosts)
    inventory['all']['vars'] = dict(group_vars or {})
    return Rulebook(e2e['work'], rulebook, e2e['collections'], inventory, variables, name=name)


def wait_for_polling(rulebook, simulator):
    def polling():
        rulebook.check_running()
        return len(simulator.polls_of('WestNO_0')) >= 2
    wait_until(polling, STARTUP_TIMEOUT, 'ansible-rulebook polling the simulator', interval=0.25)


def wait_for_message(rulebook, text):
    def printed():
        rulebook.check_running()
        return [message for dummy, message in rulebook.debug_messages() if text in message]
    return wait_until(printed, ACTION_TIMEOUT, 'the rulebook printing %r' % text, interval=0.25)


def test_user_events_are_approved_by_their_leader_and_platform_events_are_not(e2e):
    simulator = e2e['simulator']
    hosts = {'WestNO_0': simulator.endpoint('WestNO_0'), 'WestNO_1': simulator.endpoint('WestNO_1')}
    user_reboot, platform_freeze = new_event_id(), new_event_id()
    with start_rulebook(e2e, 'azure_maintenance.scheduled_events.approve_user_events', {}, hosts, 'approve') as rulebook:
        wait_for_polling(rulebook, simulator)
        # Its JVM writes nothing outside the test's folders (such a file stays while the JVM runs).
        assert not os.path.exists(rulebook.jvm_perf_data_path())
        simulator.control.create_event('Freeze', ['WestNO_0', 'WestNO_1'], event_id=platform_freeze,
                                       event_source='Platform')
        # Both VMs, WestNO_1 first: the playbook runs on both hosts, and only the leader approves.
        simulator.control.create_event('Reboot', ['WestNO_1', 'WestNO_0'], event_id=user_reboot,
                                       event_source='User')

        approvals = wait_until(lambda: rulebook.check_running() or simulator.approvals_of(user_reboot),
                               ACTION_TIMEOUT, 'the approval of the User reboot')
        # The watcher polls WestNO_0, but the playbook ran on the event's hosts
        # and the leader approved through its own IMDS.
        assert [(approval['vm'], approval['status']) for approval in approvals] == [('WestNO_1', 200)]
        wait_for_message(rulebook, '%s started' % user_reboot)
        # Each host says what it did: the follower why it left the event alone.
        wait_until(lambda: rulebook.check_running() or
                   "WestNO_0: approved [], skipped ['%s: not_leader']" % user_reboot in rulebook.output(),
                   ACTION_TIMEOUT, 'the follower saying why it did not approve')
        assert "WestNO_1: approved ['%s'], skipped []" % user_reboot in rulebook.output()
        wait_for_message(rulebook, '%s new: Freeze Scheduled from Platform' % platform_freeze)
        output_before_quiet = rulebook.output()

        # The Platform freeze is logged, never approved by this rulebook.
        time.sleep(QUIET_SECONDS)
        assert simulator.approvals_of(platform_freeze) == []
        assert simulator.control.event(platform_freeze)['status'] == 'Scheduled'
        rulebook.check_running()

    # Every change was logged exactly once.
    messages = [message for dummy, message in rulebook.debug_messages()]
    assert len([m for m in messages if '%s new:' % user_reboot in m]) == 1
    assert len([m for m in messages if '%s started:' % user_reboot in m]) == 1
    assert len([m for m in messages if '%s new:' % platform_freeze in m]) == 1
    assert 'Approve the event from its leader %s' % user_reboot in output_before_quiet
    assert rulebook.stop_seconds is not None and rulebook.stop_seconds < 20


def test_maintenance_rulebook_runs_the_rolling_playbook_for_the_affected_hosts(e2e, tmp_path):
    simulator = e2e['simulator']
    record_dir = str(tmp_path / 'records')
    os.makedirs(record_dir)
    hosts = {'web-0': simulator.endpoint('WestNO_0'), 'web-1': simulator.endpoint('WestNO_1')}
    variables = {'azure_scheduled_events_host_map': {'WestNO_0': 'web-0', 'WestNO_1': 'web-1'}}
    # The rolling playbook's settings come from the inventory, as in the docs.
    group_vars = {'maintenance_groups': ['westno'], 'record_dir': record_dir}
    platform_reboot, user_redeploy = new_event_id(), new_event_id()
    with start_rulebook(e2e, 'azure_maintenance.scheduled_events.maintenance', variables, hosts, 'maintenance',
                        group_vars) as rulebook:
        wait_for_polling(rulebook, simulator)
        simulator.control.create_event('Reboot', ['WestNO_0'], event_id=platform_reboot, event_source='Platform')
        record_path = os.path.join(record_dir, '%s-web-0.json' % platform_reboot)
        wait_until(lambda: rulebook.check_running() or os.path.exists(record_path), ACTION_TIMEOUT,
                   'the rolling maintenance playbook run for the Platform reboot')
        simulator.control.create_event('Redeploy', ['WestNO_1'], event_id=user_redeploy, event_source='User')
        approvals = wait_until(lambda: rulebook.check_running() or simulator.approvals_of(user_redeploy),
                               ACTION_TIMEOUT, 'the approval of the User redeploy')
        assert [approval['vm'] for approval in approvals] == ['WestNO_1']

    with open(record_path, encoding='utf-8') as handle:
        record = json.load(handle)
    assert record['limit'] == 'web-0'
    assert record['maintenance_groups'] == ['westno']
    assert record['scheduled_event']['event_type'] == 'Reboot'
    assert record['scheduled_event']['change'] == 'new'
    # Only the event's host ran it, and the rolling playbook never ran for the User event.
    assert sorted(os.listdir(record_dir)) == ['%s-web-0.json' % platform_reboot]
    # The rolling playbook approves Platform events itself; the rulebook must not have.
    assert simulator.approvals_of(platform_reboot) == []
