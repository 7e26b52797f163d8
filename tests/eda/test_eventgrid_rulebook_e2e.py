# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet_eventgrid rulebook in a real ansible-rulebook, fed by the simulator's Event Grid pushes.

The simulator's ARM facade validates the webhook (handshake) and pushes each
row change; the rulebook must log it and run the rolling playbook (a
recording stand-in here) for the hosts of each new event only.
"""

import json
import os
import sys
import urllib.request

import pytest

from eda_harness import RECORDING_ROLLING_PLAYBOOK, HarnessError, Rulebook, ensure_java, make_collection_tree
from eda_harness import rulebook_command, wait_until
from imds_simulator.process import SimulatorProcess, unused_port

STARTUP_TIMEOUT = 120.0
ACTION_TIMEOUT = 90.0


def arm_settings(arm_url, settings=None):
    """PUT ``settings`` to the ARM facade (GET its state when None); its state."""
    body = None if settings is None else json.dumps(settings).encode()
    request = urllib.request.Request(arm_url + '/_simulator/arm', data=body, method='GET' if body is None else 'PUT',
                                     headers={'Content-Type': 'application/json'})
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=10) as response:
        return json.loads(response.read())


def test_pushed_events_run_the_rolling_playbook_for_their_hosts(tmp_path):
    try:
        ensure_java()
        rulebook_command()
    except HarnessError as exc:
        pytest.fail(str(exc))
    record_dir = tmp_path / 'records'
    record_dir.mkdir()
    collections = str(tmp_path / 'collections')
    make_collection_tree(collections, {'rolling_maintenance.yml': RECORDING_ROLLING_PLAYBOOK})
    config = {'vms': [{'name': name, 'listen': '127.0.0.1:0', 'group': 'avset'} for name in ('vm0', 'vm1', 'vm2')]}
    port = unused_port()
    inventory = {'all': {'hosts': {host: {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}
                                   for host in ('web-0', 'web-1', 'web-2')},
                         'vars': {'record_dir': str(record_dir)}}}
    variables = {'azure_eventgrid_host': '127.0.0.1', 'azure_eventgrid_port': port, 'azure_eventgrid_secret': 's3cret',
                 'azure_scheduled_events_host_map': {'vm0': 'web-0', 'vm1': 'web-1', 'vm2': 'web-2'}}
    with SimulatorProcess(tmp_path / 'sim', config=config, extra_args=['--arm', '127.0.0.1:0']) as sim:
        with Rulebook(str(tmp_path), 'azure_maintenance.scheduled_events.fleet_eventgrid', collections, inventory,
                      variables, name='eventgrid') as rulebook:
            webhook = 'http://127.0.0.1:%d/eventgrid?code=s3cret' % port
            arm_settings(sim.arm_url, {'eventgrid': {'webhook': webhook, 'poll_seconds': 0.1}})

            def validated():
                rulebook.check_running()
                return arm_settings(sim.arm_url)['eventgrid_validated']
            wait_until(validated, STARTUP_TIMEOUT, 'the webhook passing Event Grid validation', interval=1.0)
            event_id = sim.control.create_event('Reboot', ['vm1', 'vm2'], not_before_seconds=900)
            records = [record_dir / ('%s-%s.json' % (event_id, host)) for host in ('web-1', 'web-2')]
            wait_until(lambda: rulebook.check_running() or all(path.exists() for path in records), ACTION_TIMEOUT,
                       'the rolling playbook run for the pushed event')
            sim.control.start_event(event_id)
            wait_until(lambda: rulebook.check_running() or [m for dummy, m in rulebook.debug_messages()
                                                            if '%s started' % event_id in m],
                       ACTION_TIMEOUT, 'the rulebook logging the Started change', interval=0.25)
    record = json.loads(records[0].read_text())
    assert record['scheduled_event']['event_id'] == event_id
    assert record['scheduled_event']['change'] == 'new' and record['scheduled_event']['source'] == 'eventgrid'
    assert record['scheduled_event']['arm_id'].endswith('/scheduledevents/' + event_id)
    # Only the event's hosts ran it, once each, and the Started change started nothing.
    assert sorted(os.listdir(record_dir)) == sorted(path.name for path in records)
