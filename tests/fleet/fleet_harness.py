# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the fleet-plane modules for real (ansible, local connection) against the simulator's ARM facade.

A test gets a ``FleetWorld``: a simulator on kernel-chosen ports with its
ARM facade, in the test's own folder, and ``run(module, **args)`` that runs
one module with ``ansible localhost -m`` through a link tree laid out like
an installed collection, returning the module's result.
"""

import json
import os
import subprocess
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIMULATOR_DIR = os.path.join(REPO_ROOT, 'tests', 'simulator')
# The ansible settings every ansible run of the tests shares: see its comments.
ANSIBLE_TEST_CONFIG = os.path.join(REPO_ROOT, 'tests', 'integration', 'integration.cfg')
if SIMULATOR_DIR not in sys.path:
    sys.path.insert(0, SIMULATOR_DIR)

from imds_simulator.process import SimulatorProcess  # noqa: E402  pylint: disable=wrong-import-position

TOKEN = 'fleet-test-token'
SUBSCRIPTION = '8d10da13-8125-4ba9-a717-bf7490507b3d'
_ANSIBLE = os.path.join(os.path.dirname(sys.executable), 'ansible')
_RUN_TIMEOUT_SECONDS = 120


def link_collection(parent):
    """Lay the checkout out as ``parent/ansible_collections/azure_maintenance/scheduled_events``."""
    namespace_dir = os.path.join(str(parent), 'ansible_collections', 'azure_maintenance')
    os.makedirs(namespace_dir, exist_ok=True)
    link = os.path.join(namespace_dir, 'scheduled_events')
    if not os.path.islink(link):
        os.symlink(REPO_ROOT, link)
    return str(parent)


def fleet_config(vm_count, groups=1, resource_groups=('rg-fleet',)):
    """``vm_count`` VMs spread over ``groups`` availability sets and the given resource groups."""
    vms = []
    for index in range(vm_count):
        vms.append({'name': 'vm%04d' % index, 'listen': '127.0.0.1:0', 'group': 'avset%d' % (index % groups),
                    'resourceGroupName': resource_groups[index % len(resource_groups)],
                    'platformUpdateDomain': str(index % 5)})
    return {'vms': vms, 'throttle': {'enabled': False, 'per_second': 5}}


class FleetWorld:
    """A simulator with an ARM facade in ``work_dir``; a context manager."""

    def __init__(self, work_dir, config, arm_settings=None):
        self.work_dir = str(work_dir)
        settings = {'tokens': {TOKEN: ['ScheduledEventContributor'], 'reader-token': ['Reader']}}
        settings.update(arm_settings or {})
        os.makedirs(self.work_dir, exist_ok=True)
        settings_file = os.path.join(self.work_dir, 'arm-settings.json')
        with open(settings_file, 'w', encoding='utf-8') as handle:
            json.dump(settings, handle)
        self.sim = SimulatorProcess(os.path.join(self.work_dir, 'sim'), config=config,
                                    extra_args=['--arm', '127.0.0.1:0', '--arm-settings', settings_file])
        self.collections = link_collection(os.path.join(self.work_dir, 'collections'))

    def __enter__(self):
        self.sim.start()
        return self

    def __exit__(self, *exc_info):
        self.sim.stop()

    @property
    def control(self):
        return self.sim.control

    def arm_args(self, **args):
        base = {'management_endpoint': self.sim.arm_url, 'bearer_token': TOKEN}
        base.update(args)
        return base

    def ansible_env(self):
        """The environment of an ansible or ansible-playbook run: this collection, and every folder in the test's."""
        return dict(os.environ, ANSIBLE_CONFIG=ANSIBLE_TEST_CONFIG, ANSIBLE_COLLECTIONS_PATH=self.collections,
                    ANSIBLE_STDOUT_CALLBACK='minimal', ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='0',
                    ANSIBLE_INVENTORY_UNPARSED_WARNING='0', ANSIBLE_HOME=os.path.join(self.work_dir, 'ansible-home'),
                    ANSIBLE_LOCAL_TEMP=os.path.join(self.work_dir, 'ansible-tmp'))

    def run_playbook(self, playbook, inventory, check=False, extra_vars=None):
        """Run ``playbook`` (a list of plays) over ``inventory`` (a YAML-able dict); the finished process."""
        paths = []
        for name, content in (('playbook.yml', playbook), ('inventory.yml', inventory)):
            path = os.path.join(self.work_dir, name)
            with open(path, 'w', encoding='utf-8') as handle:
                json.dump(content, handle)  # JSON is YAML
            paths.append(path)
        command = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', paths[1], paths[0],
                   '-e', json.dumps(dict(extra_vars or {}, ansible_python_interpreter=sys.executable))]
        if check:
            command.append('--check')
        return subprocess.run(command, capture_output=True, text=True, env=self.ansible_env(),
                              timeout=_RUN_TIMEOUT_SECONDS, check=False, stdin=subprocess.DEVNULL)

    def imds_requests(self):
        """``{vm: requests}`` the VMs' IMDS received."""
        return dict((vm['name'], vm['request_count']) for vm in self.control.state()['vms'] if vm['request_count'])

    def run(self, module, check=False, **args):
        """The result of ``module`` run once on localhost with the ARM options plus ``args``."""
        env = self.ansible_env()
        command = [_ANSIBLE, 'localhost', '-c', 'local', '-e', 'ansible_python_interpreter=' + sys.executable,
                   '-m', 'azure_maintenance.scheduled_events.' + module, '-a', json.dumps(self.arm_args(**args))]
        if check:
            command.append('--check')
        completed = subprocess.run(command, capture_output=True, text=True, env=env, timeout=_RUN_TIMEOUT_SECONDS,
                                   check=False, stdin=subprocess.DEVNULL)
        # The minimal callback prints "localhost | STATUS => {result as JSON}".
        head, dummy, result = completed.stdout.partition(' => ')
        try:
            parsed = json.loads(result)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            # That callback drops "failed" from the JSON; the status before the arrow tells.
            parsed['failed'] = 'FAILED' in head or 'UNREACHABLE' in head
            return parsed
        raise AssertionError('ansible gave no JSON result (exit %d):\n%s\n%s'
                             % (completed.returncode, completed.stdout[-3000:], completed.stderr[-3000:]))
