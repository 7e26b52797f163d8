# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""RollingWorld over the fleet plane: rolling_source resource_graph against the simulator's ARM facade.

The inventory looks like one from the azure.azcollection.azure_rm inventory
plugin (each host's ``name`` and ``id`` are its VM's name and ARM id) and
gives no IMDS endpoint: a host whose IMDS were read would show in the
simulator's request log, which the tests check stays empty.
"""

import json
import os

from rolling_harness import RollingWorld, inventory_name
from imds_simulator.config import DEFAULT_RESOURCE_GROUP, DEFAULT_SUBSCRIPTION  # pylint: disable=wrong-import-order

TOKEN = 'rolling-fleet-token'


class FleetRollingWorld(RollingWorld):
    """A RollingWorld whose playbook runs observe through Resource Graph and approve through ARM."""

    def simulator_args(self):
        os.makedirs(self.workdir, exist_ok=True)
        settings = os.path.join(self.workdir, 'arm-settings.json')
        with open(settings, 'w', encoding='utf-8') as handle:
            # No quota: a round every second from one test must not be throttled.
            json.dump({'tokens': {TOKEN: ['ScheduledEventContributor']}, 'quota': None}, handle)
        return ['--arm', '127.0.0.1:0', '--arm-settings', settings]

    def write_inventory(self):
        path = super().write_inventory()
        with open(path, encoding='utf-8') as handle:
            inventory = json.load(handle)
        # The simulator's VMs all live in its default subscription and resource group.
        ids = dict((vm, '/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/virtualMachines/%s'
                    % (DEFAULT_SUBSCRIPTION, DEFAULT_RESOURCE_GROUP, vm)) for vm, *_rest in self.vm_groups())
        for group in inventory['all']['children'].values():
            for host, variables in group['hosts'].items():
                vm_name = next(vm for vm, _group, _avset, _domain in self.vm_groups() if inventory_name(vm) == host)
                variables.pop('azure_scheduled_events_endpoint', None)
                variables.pop('azure_scheduled_events_resource_name', None)
                variables.update(name=vm_name, id=ids[vm_name])
        with open(path, 'w', encoding='utf-8') as handle:
            json.dump(inventory, handle, indent=1)
        return path

    def extra_vars(self, **overrides):
        extra = super().extra_vars()
        extra.update(rolling_source='resource_graph',
                     rolling_fleet_options={'management_endpoint': self.simulator.arm_url, 'bearer_token': TOKEN})
        extra.update(overrides)
        return extra

    def imds_requests(self):
        """``{vm: requests}`` the VMs' IMDS received; the fleet plane must make none."""
        return dict((vm['name'], vm['request_count']) for vm in self.control.state()['vms'] if vm['request_count'])
