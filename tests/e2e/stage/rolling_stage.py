# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The whole stage: simulator, backends, HAProxy, load, and the playbook run.

World: 6 web VMs (update domains 0-2) and 4 api VMs (update domains 0-1) in
two availability sets, plus a VM of the api set that is not in the inventory
(``partner_0``). Inventory groups ``web`` and ``api``; every inventory VM
serves through HAProxy (backends ``web`` and ``api``).
"""

import json
import os
import sys
import threading
import time

from .backends import BackendFleet
from .haproxy import HAProxy, StateWatcher, haproxy_binary
from .load import LoadGenerator

HERE = os.path.dirname(os.path.abspath(__file__))
E2E_DIR = os.path.dirname(HERE)
COLLECTION_ROOT = os.path.dirname(os.path.dirname(E2E_DIR))
PLAYBOOK = 'azure_maintenance.scheduled_events.rolling_maintenance'

# The simulator's package is on the path already (__init__.py).
ROLLING_TESTS_DIR = os.path.join(COLLECTION_ROOT, 'tests', 'rolling')
if ROLLING_TESTS_DIR not in sys.path:
    sys.path.insert(0, ROLLING_TESTS_DIR)
from rolling_harness import (  # noqa: E402 pylint: disable=wrong-import-position
    ANSIBLE_TEST_CONFIG, collections_path, impacts_of, linger_to_skip_once_read, run_streaming, scenario_steps_due)
from imds_simulator.clock import ALL_BUT_STOPPED  # noqa: E402 pylint: disable=wrong-import-position
from imds_simulator.process import SimulatorProcess  # noqa: E402 pylint: disable=wrong-import-position

GROUPS = {
    'web': {'avset': 'web-avset', 'vms': [('web_%d' % index, str(index // 2)) for index in range(6)],
            'max_unavailable': '50%', 'route': '/'},
    'api': {'avset': 'api-avset', 'vms': [('api_%d' % index, str(index // 2)) for index in range(4)],
            'max_unavailable': '75%', 'route': '/api'},
}
FOREIGN_VM = ('partner_0', 'api-avset', '1')
# Real seconds a linger skip leaves the run before the NotBefore of an event
# still Scheduled (the foreign Freeze waits for its NotBefore through most of
# the scenario): time for rounds to read it and drain its hosts, even on a
# busy machine, however far the jump brings that NotBefore nearer.
SCHEDULED_CLEARANCE_SECONDS = 20.0

# Event ids, fixed so the checks can name them.
FREEZE_WEB_UD0 = 'E2E00000-0000-4000-8000-000000000001'
REBOOT_WEB_UD1 = 'E2E00000-0000-4000-8000-000000000002'
REDEPLOY_WEB_UD2 = 'E2E00000-0000-4000-8000-000000000003'
FREEZE_API_UD0 = 'E2E00000-0000-4000-8000-000000000004'
REBOOT_API_UD1 = 'E2E00000-0000-4000-8000-000000000005'
USER_REBOOT = 'E2E00000-0000-4000-8000-000000000006'
FOREIGN_FREEZE = 'E2E00000-0000-4000-8000-000000000007'
HARDWARE_FAILURE = 'E2E00000-0000-4000-8000-000000000008'


def inventory_name(vm_name):
    """Inventory host names differ from VM names, as they often do on Azure."""
    return vm_name.replace('_', '')


def maintenance_scenario():
    """Scenario steps (simulated seconds): Platform Freezes, Reboots and a
    Redeploy one update domain after another, a User reboot, an event naming
    a VM outside the inventory, and a hardware failure that appears Started.

    Impacts are long enough in real time (at the stage's speed of 12) for a
    frozen, undrained server to fail requests past HAProxy's 1 s server
    time-out."""
    def step(label, event_id, event_type, resources, **fields):
        # Events stay Started 4 simulated minutes (20 s at the stage's speed)
        # rather than Azure's typical 10: a controller that reads every few
        # seconds, even on a busy machine, still sees every one of them start,
        # and the run, which ends only once they have left, waits less.
        step = {'label': label, 'action': 'create_event', 'event_id': event_id, 'event_type': event_type,
                'resources': resources, 'impact_seconds': 40, 'linger_seconds': 240}
        step.update(fields)
        if 'after_removed' not in step:
            step.setdefault('at_seconds', 0)
        return step
    return [
        step('web_ud0', FREEZE_WEB_UD0, 'Freeze', ['web_0', 'web_1'], duration_seconds=30, impact_seconds=30),
        step('web_ud1', REBOOT_WEB_UD1, 'Reboot', ['web_2', 'web_3'], after_removed='web_ud0', delay_seconds=4),
        step('web_ud2', REDEPLOY_WEB_UD2, 'Redeploy', ['web_4', 'web_5'], after_removed='web_ud1', delay_seconds=4),
        step('api_ud0', FREEZE_API_UD0, 'Freeze', ['api_0', 'api_1'], duration_seconds=30, impact_seconds=30),
        step('api_ud1', REBOOT_API_UD1, 'Reboot', ['api_2', 'api_3'], after_removed='api_ud0', delay_seconds=4),
        step('user_reboot', USER_REBOOT, 'Reboot', ['api_1'], at_seconds=10, event_source='User'),
        step('foreign', FOREIGN_FREEZE, 'Freeze', ['api_3', FOREIGN_VM[0]], at_seconds=20, duration_seconds=30,
             impact_seconds=30),
        step('hardware_failure', HARDWARE_FAILURE, 'Reboot', ['web_5'], at_seconds=60, hardware_failure=True),
    ]


def first_impacts_scenario():
    """The steps that open the scenario, within its first 10 simulated seconds
    and waiting for no other event: the Platform Freeze of update domain 0 in
    each group and the User reboot, the first impacts of a Freeze and of a
    restart.

    Enough to show that requests fail on hosts that are not drained, without
    the update domains that wait for each other (about two thirds of the
    whole scenario's time and CPU)."""
    return [step for step in maintenance_scenario() if step['label'] in ('web_ud0', 'api_ud0', 'user_reboot')]


def scenario_event_ids():
    return [step['event_id'] for step in maintenance_scenario()]


def impact_starts_running(impacts, event_ids):
    """The ids among ``event_ids`` (lower case, sorted) whose impact has not yet been started on every VM.

    ``impacts``: the simulator's impact records. A start command that has
    exited, whether it worked or not, has done what it will; one that waits
    for its VM's earlier command, or runs, has not. The commands end on their
    own (``impact_hook.py`` gives up after 10 s), so a wait on this ends too.
    """
    wanted = set(event_id.lower() for event_id in event_ids)
    return sorted(set(record['event_id'].lower() for record in impacts
                      if record['phase'] == 'start' and record['event_id'].lower() in wanted
                      and record.get('exit_code') is None and not record.get('error')))


class RollingStage:
    """Start with ``start()``, always ``stop()`` (or use it as a context manager)."""

    def __init__(self, workdir, address='127.0.0.1', speed=12.0, with_haproxy=True, load_rate=60.0, skip_linger=True):
        self.workdir = workdir
        # Whether pace_clock_while skips the time handled events only linger
        # in the document; the demo keeps it, as a run on Azure would.
        self.skip_linger = skip_linger
        self.address = address
        self.speed = speed
        self.with_haproxy = with_haproxy and haproxy_binary() is not None
        self.load_rate = load_rate
        self.control = None
        self.fleet = BackendFleet(address)
        self.haproxy = None
        self.watcher = None
        self.load = None
        self.simulator = None
        self.vms = []  # (vm name, inventory group or None, avset, update domain, port)
        self.report_dir = os.path.join(workdir, 'reports')

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc_info):
        self.stop()

    # -- starting ---------------------------------------------------------
    def start(self):
        os.makedirs(self.workdir, exist_ok=True)
        # Port 0 until the simulator has bound each VM's port (_start_simulator).
        for group, spec in GROUPS.items():
            for vm_name, domain in spec['vms']:
                self.vms.append((vm_name, group, spec['avset'], domain, 0))
        self.vms.append((FOREIGN_VM[0], None, FOREIGN_VM[1], FOREIGN_VM[2], 0))
        for vm_name, group, _avset, _domain, _port in self.vms:
            if group is not None:
                self.fleet.add(vm_name)
        admin_url = self.fleet.start_admin()
        if self.with_haproxy:
            pools = dict((group, [(inventory_name(vm), self.address, self.fleet.backends[vm].port)
                                  for vm, _domain in spec['vms']]) for group, spec in GROUPS.items())
            self.haproxy = HAProxy(self.workdir, self.address, pools, [('/api', 'api')])
            self.haproxy.start()
            self.watcher = StateWatcher(self.haproxy)
            self.watcher.start()
        self._start_simulator(admin_url)

    def impact_command(self, admin_url):
        """The simulator's impact command: tell the backend fleet at ``admin_url`` what an event does to a VM."""
        return [sys.executable, os.path.join(E2E_DIR, 'impact_hook.py'), admin_url,
                '{phase}', '{vm}', '{event_type}', '{event_id}']

    def _start_simulator(self, admin_url):
        config = {
            'vms': [{'name': vm, 'listen': '%s:%d' % (self.address, port), 'group': avset,
                     'platformUpdateDomain': domain} for vm, _group, avset, domain, port in self.vms],
            'speed': self.speed,
            'impact_command': self.impact_command(admin_url),
        }
        self.simulator = SimulatorProcess(self.workdir, config=config)
        self.simulator.start()
        self.control = self.simulator.control
        bound = self.simulator.ready['vms']
        self.vms = [(vm, group, avset, domain, int(bound[vm].rpartition(':')[2]))
                    for vm, group, avset, domain, _port in self.vms]

    def start_load(self):
        if self.haproxy is None:
            return None
        self.load = LoadGenerator(self.address, self.haproxy.port, rate=self.load_rate)
        self.load.start()
        return self.load

    def start_scenario(self, steps=None):
        return self.control.start_scenario(steps=steps or maintenance_scenario())

    # -- files for ansible-playbook -----------------------------------------
    def host_vars(self, vm_name, group, port):
        host_vars = {
            'ansible_connection': 'local',
            'ansible_python_interpreter': sys.executable,
            'azure_scheduled_events_endpoint': 'http://%s:%d/metadata/scheduledevents' % (self.address, port),
            'health_check_url': self.fleet.backends[vm_name].url + '/health',
            'health_check_timeout': 60,
        }
        if self.haproxy is not None:
            host_vars.update(haproxy_backend=group, haproxy_runtime_api=self.haproxy.socket,
                             haproxy_python=sys.executable)
        return host_vars

    def write_inventory(self, path=None):
        path = path or os.path.join(self.workdir, 'inventory.json')
        inventory = {'all': {'children': {}}}
        for vm_name, group, _avset, _domain, port in self.vms:
            if group is None:
                continue
            hosts = inventory['all']['children'].setdefault(group, {'hosts': {}})['hosts']
            hosts[inventory_name(vm_name)] = self.host_vars(vm_name, group, port)
        with open(path, 'w') as handle:
            json.dump(inventory, handle, indent=1)
        return path

    def extra_vars(self, drain=True, approve=True, **overrides):
        drain = drain and self.haproxy is not None
        settings = {}
        for group, spec in GROUPS.items():
            settings[group] = {'verify_tasks': 'http_health_check.yml', 'max_unavailable': spec['max_unavailable']}
            if drain:
                settings[group].update(drain_tasks='haproxy_drain.yml', undrain_tasks='haproxy_undrain.yml')
        extra = {
            'maintenance_groups': list(GROUPS),
            'rolling_group_settings': settings,
            'rolling_approve': approve,
            # Counted from the moment the events the run handled have left
            # the document; the next update domain's event comes 4 simulated
            # seconds (a third of a second) after that.
            'rolling_settle_seconds': 10,
            'rolling_poll_interval_seconds': 1,
            'rolling_time_budget_seconds': 900,
            # The simulated clock runs ahead of real time, so NotBefore looks
            # further away than it is: drain events that cannot be approved at once.
            'rolling_drain_lead_seconds': 10 ** 7,
            'rolling_report_dir': self.report_dir,
        }
        extra.update(overrides)
        return extra

    def write_extra_vars(self, path=None, **kwargs):
        path = path or os.path.join(self.workdir, 'extra_vars.json')
        with open(path, 'w') as handle:
            json.dump(self.extra_vars(**kwargs), handle, indent=1)
        return path

    def ansible_env(self):
        env = dict(os.environ)
        env.update(ANSIBLE_CONFIG=ANSIBLE_TEST_CONFIG,
                   ANSIBLE_COLLECTIONS_PATH=collections_path(self.workdir), ANSIBLE_FORKS='16',
                   ANSIBLE_HOST_KEY_CHECKING='False', ANSIBLE_NOCOLOR='1', ANSIBLE_RETRY_FILES_ENABLED='False',
                   ANSIBLE_LOCALHOST_WARNING='False', ANSIBLE_DEPRECATION_WARNINGS='False',
                   ANSIBLE_PYTHON_INTERPRETER=sys.executable)
        for name in ('http_proxy', 'https_proxy', 'HTTP_PROXY', 'HTTPS_PROXY', 'all_proxy', 'ALL_PROXY'):
            env.pop(name, None)
        return env

    def run_playbook(self, log_name='playbook.log', extra_args=(), timeout=900, echo=False, **extra_var_options):
        """Run the rolling playbook; returns (exit code, log path, seconds).

        With ``echo`` the output also goes to this process's stdout.
        """
        inventory = self.write_inventory()
        extra = self.write_extra_vars(path=os.path.join(self.workdir, log_name + '.vars.json'), **extra_var_options)
        playbook_bin = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
        log_path = os.path.join(self.workdir, log_name)
        started = time.time()
        command = [playbook_bin, '-i', inventory, PLAYBOOK, '-e', '@' + extra] + list(extra_args)
        code = run_streaming(command, self.ansible_env(), self.workdir, log_path, timeout=timeout, echo=echo)
        return code, log_path, time.time() - started

    def run_playbook_pacing_clock(self, timeout=900, **options):
        """``run_playbook`` while ``pace_clock_while`` steers the simulated clock (``run_pacing_clock``)."""
        return self.run_pacing_clock(lambda: self.run_playbook(timeout=timeout, **options), timeout)

    def run_pacing_clock(self, run, timeout=900):
        """Call ``run`` (a playbook run, an ansible-runner job) in a thread while ``pace_clock_while`` holds the
        clock each time events start and skips what the run only waits out; return what it returned. For runs
        whose checks need the run to have seen every event that started."""
        results = []
        player = threading.Thread(target=lambda: results.append(run()))
        player.start()
        try:
            self.pace_clock_while(player.is_alive, timeout=timeout)
        finally:
            player.join(timeout + 60)
        if not results:
            raise RuntimeError('the run did not end within %d s (see %s)' % (timeout, self.workdir))
        return results[0]

    # -- reading what happened ----------------------------------------------
    def latest_report(self):
        names = sorted(name for name in os.listdir(self.report_dir) if name.endswith('.json'))
        with open(os.path.join(self.report_dir, names[-1])) as handle:
            return json.load(handle), os.path.join(self.report_dir, names[-1][:-5] + '.html')

    def host_of(self, vm_name):
        for name, group, _avset, _domain, _port in self.vms:
            if name == vm_name and group is not None:
                return inventory_name(name)
        return None

    def wait_until_quiet(self, timeout=120):
        """Wait until the simulator has no event left and every impact has ended."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            events = [event for event in self.control.state()['events'] if event['status'] in ('Scheduled', 'Started')]
            if not events and all(backend.state == 'up' for backend in self.fleet.backends.values()):
                return True
            time.sleep(0.5)
        return False

    def reads_of(self, vm_name, since=0):
        """Sequence numbers of ``vm_name``'s Scheduled Events reads the simulator logged after ``since``."""
        return [entry['seq'] for entry in self.control.log(since=since, vm=vm_name)
                if entry['method'] == 'GET' and entry['path'].startswith('/metadata/scheduledevents')]

    def pace_clock_while(self, running, timeout=900):
        """While ``running()`` (at most ``timeout`` real seconds), steer the simulated clock so that what a run
        sees does not depend on how fast this machine is, and it does not wait out what cannot matter:

        - whenever events start, all but stop the clock until each of them has
          been read by one of its VMs in the inventory, then let it go on at
          the stage's speed. An event stays Started 20 s at the stage's speed,
          then leaves. With two test runs at once on two cores, a round took
          longer than that, and an event that comes and goes between two
          reads cannot be seen: the run took the foreign Freeze for cancelled
          and never saw the hardware failure;
        - and until the impact command has started each of them in the
          stage (``impact_starts_running``): a Freeze's 30 simulated seconds
          are 2.5 s at the stage's speed, and the command, a Python process,
          took as long as that to start on a busy machine, so the backend was
          frozen for half a second, no request waited past HAProxy's 1 s
          server time-out, and the run without draining failed no request;
        - once every Started event in the document has been read Started by
          a round and its impact has ended, and every event still Scheduled
          has its NotBefore at least SCHEDULED_CLEARANCE_SECONDS (real time)
          after the jump, move the clock just past the first one's removal
          (``linger_to_skip_once_read``): until then the run only reads what
          does not change. An event naming a VM outside the inventory (the
          foreign Freeze), which the run never approves, holds nothing once
          HAProxy has every VM of the inventory it names drained: the run
          would only wait for its NotBefore. A stage made with
          ``skip_linger=False`` keeps the whole wait.

        Returns the ids of the events it held the clock for.
        """
        managed = set(vm for vm, group, _avset, _domain, _port in self.vms if group is not None)
        deadline = time.monotonic() + timeout
        held = []
        while running() and time.monotonic() < deadline:
            state = self.control.state()
            starting = {}
            for event in state['events']:
                vms = set(event['resources']) & managed
                if event['status'] == 'Started' and event['id'] not in held and vms:
                    starting[event['id']] = vms
            if not starting:
                if self.skip_linger:
                    seconds = linger_to_skip_once_read(
                        state['events'], state['clock']['epoch'], impacts_of(self.control), held, managed,
                        clearance=SCHEDULED_CLEARANCE_SECONDS * self.speed, due=scenario_steps_due(state.get('scenario')),
                        drained=self.drained_vms(managed))
                    if seconds is not None:
                        self.control.advance_clock(seconds)
                time.sleep(0.2)
                continue
            self.control.set_speed(ALL_BUT_STOPPED)
            try:
                since = max([0] + [entry['seq'] for entry in self.control.log()])
                unread = dict(starting)
                while running() and time.monotonic() < deadline:
                    unread = dict((event_id, vms) for event_id, vms in unread.items()
                                  if not any(self.reads_of(vm, since) for vm in vms))
                    if not unread and not impact_starts_running(self.control.impacts(), starting):
                        break
                    time.sleep(0.2)
            finally:
                self.control.set_speed(self.speed)
            held.extend(sorted(starting))
        return held

    def drained_vms(self, vm_names):
        """Those of ``vm_names`` whose HAProxy server is drained (or in maintenance) now: none without HAProxy."""
        if self.watcher is None:
            return set()
        now = time.time()
        return set(vm for vm in vm_names if self.watcher.drained(self.watcher.state_at(inventory_name(vm), now)))

    # -- stopping -----------------------------------------------------------
    def stop(self):
        if self.load is not None:
            self.load.stop()
        if self.watcher is not None:
            self.watcher.stop()
        if self.simulator is not None:
            self.simulator.stop()
        if self.haproxy is not None:
            self.haproxy.stop()
        self.fleet.stop()
