# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""scheduled_events_approve with via: arm, from a playbook, against the simulator's ARM facade.

The inventory is shaped like one from azure.azcollection.azure_rm: host
names that are not the VM names, with the VMs' ``name`` and ARM ``id`` as
variables. The hosts' connection points at a closed port, so any attempt to
reach a host fails the task: the approval must go through ARM alone, and no
VM's IMDS may be asked anything.
"""

import json
import os
import socket

import pytest

from fleet_harness import SUBSCRIPTION, TOKEN, FleetWorld, fleet_config

# host -> VM
HOSTS = {'frontend-a': 'vm0000', 'frontend-b': 'vm0001', 'backend-c': 'vm0002'}


@pytest.fixture
def world(tmp_path):
    with FleetWorld(tmp_path, fleet_config(5, groups=1)) as started:
        # Bound and never listening: refused at once, and no other program can take it.
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
            holder.bind(('127.0.0.1', 0))
            started.closed_port = holder.getsockname()[1]
            yield started


def inventory(world):
    hosts = {}
    for host, vm in HOSTS.items():
        hosts[host] = {
            'name': vm,
            'id': '/subscriptions/%s/resourceGroups/rg-fleet/providers/Microsoft.Compute/virtualMachines/%s'
                  % (SUBSCRIPTION, vm),
            # Nothing listens there: a task that tried to reach the host would fail.
            'ansible_host': '127.0.0.1', 'ansible_port': world.closed_port, 'ansible_connection': 'ssh',
            'ansible_ssh_common_args': '-o ConnectTimeout=3 -o StrictHostKeyChecking=no',
        }
    return {'all': {'hosts': hosts}}


def playbook(results_file, hosts, **approve_args):
    args = dict(approve_args, via='arm', arm={'management_endpoint': '{{ arm_url }}', 'bearer_token': TOKEN})
    return [{
        'name': 'Approve through ARM for each host',
        'hosts': hosts,
        'gather_facts': False,
        'tasks': [
            {'name': 'Approve', 'azure_maintenance.scheduled_events.scheduled_events_approve': args,
             'register': 'approval'},
            {'name': 'Keep every host\'s result', 'run_once': True, 'delegate_to': 'localhost', 'check_mode': False,
             'vars': {'ansible_connection': 'local'},
             'ansible.builtin.copy': {
                 'dest': results_file,
                 'content': "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, "
                            "'approval'))) | to_json }}"}},
        ],
    }]


def run(world, name, check=False, hosts='all', **approve_args):
    results_file = os.path.join(world.work_dir, name + '.json')
    completed = world.run_playbook(playbook(results_file, hosts, **approve_args), inventory(world), check=check,
                                   extra_vars={'arm_url': world.sim.arm_url})
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-2000:]
    with open(results_file, encoding='utf-8') as handle:
        return json.load(handle)


def approvers(world, event_id):
    return [approval['vm'] for approval in world.control.event(event_id)['approvals']]


def test_each_event_is_approved_once_for_the_hosts_vm_and_nothing_reaches_a_host(world):
    shared = world.control.create_event('Freeze', ['vm0000', 'vm0001'], not_before_seconds=900)
    own = world.control.create_event('Reboot', ['vm0002'], not_before_seconds=900)
    outsider = world.control.create_event('Freeze', ['vm0003'], not_before_seconds=900)

    would = run(world, 'check', check=True, event_types=['Freeze', 'Reboot'], leader_only=True)
    assert would['frontend-a']['approved'] == [shared] and would['backend-c']['approved'] == [own]
    assert would['frontend-b']['approved'] == []
    assert [approvers(world, event_id) for event_id in (shared, own, outsider)] == [[], [], []]

    done = run(world, 'approve', event_types=['Freeze', 'Reboot'], leader_only=True, wait='started',
               poll_interval=0.5)
    for host, vm in HOSTS.items():
        assert done[host]['via'] == 'arm' and done[host]['resource_name'] == vm, done[host]
        assert done[host]['resource_name_source'] == 'inventory'
    assert done['frontend-a']['changed'] and done['frontend-a']['approved'] == [shared]
    assert done['frontend-b']['skipped_events'] == [{'event_id': shared, 'reason': 'not_leader'}]
    assert done['backend-c']['approved'] == [own] and done['backend-c']['last_statuses'] == {own: 'Started'}
    # Once each, by ARM for the event's first VM; the outsider's event is left alone.
    assert approvers(world, shared) == ['vm0000'] and approvers(world, own) == ['vm0002']
    assert approvers(world, outsider) == []
    assert world.imds_requests() == {}

    again = run(world, 'again', event_types=['Freeze', 'Reboot'], leader_only=True)
    assert not any(result['changed'] for result in again.values())
    assert again['backend-c']['skipped_events'] == [{'event_id': own, 'reason': 'already_started'}]


def test_another_vms_event_needs_scope_all_and_its_id(world):
    neighbour = world.control.create_event('Freeze', ['vm0004'], not_before_seconds=900)
    refused = run(world, 'refused', event_ids=[neighbour])
    assert all(result['skipped_events'] == [{'event_id': neighbour, 'reason': 'not_this_vm'}]
               for result in refused.values())
    assert approvers(world, neighbour) == []
    named = run(world, 'named', hosts='frontend-a', event_ids=[neighbour], scope='all')
    assert named['frontend-a']['approved'] == [neighbour] and named['frontend-a']['changed']
    assert approvers(world, neighbour) == ['vm0004']
    assert world.imds_requests() == {}
