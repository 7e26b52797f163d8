# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the rolling maintenance playbook against a simulated fleet and check what happened.

Pytest-free, so system tests, the benchmark and the demo share it:

    with RollingWorld(tmp_path, GROUPS, foreign=[...], speed=20) as world:
        world.start_scenario(steps)
        run = world.run_playbook(rolling_event_types=[...])
        problems = world.invariant_problems(run)

Every file goes under the given work directory; the simulator binds ports
the kernel chooses. Drains and returns to service are recorded by the task
files in ``files/`` (one JSON line per step and host), so the checks compare
them with the simulator's own approval and impact logs.
"""

import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
COLLECTION_ROOT = os.path.dirname(os.path.dirname(HERE))
SIMULATOR_DIR = os.path.join(COLLECTION_ROOT, 'tests', 'simulator')
PLAYBOOK = 'azure_maintenance.scheduled_events.rolling_maintenance'
FILES = os.path.join(HERE, 'files')
# The ansible settings every ansible run of the tests shares (the file
# ansible-test reads for the integration targets): see its comments.
ANSIBLE_TEST_CONFIG = os.path.join(COLLECTION_ROOT, 'tests', 'integration', 'integration.cfg')

if SIMULATOR_DIR not in sys.path:
    sys.path.insert(0, SIMULATOR_DIR)
from imds_simulator.process import SimulatorProcess, ends_with_this_process  # noqa: E402 pylint: disable=wrong-import-position
from imds_simulator.clock import parse_iso  # noqa: E402 pylint: disable=wrong-import-position
from imds_simulator.json_lines import read_complete_lines  # noqa: E402 pylint: disable=wrong-import-position


def inventory_name(vm_name):
    """Inventory names differ from VM names, as they often do on Azure."""
    return 'host-' + vm_name.replace('_', '-')


def collections_path(workdir):
    """A directory where ansible finds this checkout as azure_maintenance.scheduled_events."""
    parts = COLLECTION_ROOT.split(os.sep)
    if len(parts) >= 3 and parts[-3] == 'ansible_collections':
        return os.sep.join(parts[:-3])
    parent = os.path.join(workdir, 'collections')
    namespace = os.path.join(parent, 'ansible_collections', 'azure_maintenance')
    os.makedirs(namespace, exist_ok=True)
    link = os.path.join(namespace, 'scheduled_events')
    if not os.path.islink(link):
        os.symlink(COLLECTION_ROOT, link)
    return parent


def run_streaming(command, env, cwd, log_path, timeout=600, echo=False):
    """Run ``command`` with its output going to ``log_path`` (and this process's stdout with ``echo``);
    after ``timeout`` seconds, stop it and every process it started. Returns its exit code (negative when
    it was stopped so, and the log's last line says so).

    The deadline holds whether or not the run prints anything: a run that
    hangs silently, or whose workers keep its output open after it ended, is
    stopped by a timer, not by the next line it prints.
    """
    # Line-buffered: tests read the log while the run goes on, to act when a
    # line appears (a block-buffered file showed a line only some 8 KiB later).
    with open(log_path, 'w', encoding='utf-8', buffering=1) as log:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, env=env, cwd=cwd, text=True,
                                   preexec_fn=ends_with_this_process())
        output_pipe = os.fstat(process.stdout.fileno()).st_ino
        stopped, output_closed = threading.Event(), threading.Event()

        def stop_the_run():
            # Once every holder has closed the output, the run has ended or
            # is ending: wait() below bounds that, and its pid may be reaped.
            if not output_closed.is_set():
                stopped.set()
                kill_run(process.pid, output_pipe)

        timer = threading.Timer(timeout, stop_the_run)
        timer.daemon = True
        timer.start()
        try:
            for line in process.stdout:
                log.write(line)
                if echo:
                    sys.stdout.write(line)
                    sys.stdout.flush()
            output_closed.set()
            process.wait(timeout=30)
        finally:
            timer.cancel()
            if process.poll() is None:
                kill_run(process.pid, output_pipe)
                process.wait(10)
        if stopped.is_set():
            log.write('run_streaming: stopped after %d s (timeout), with every process it started\n' % timeout)
    return process.returncode


def kill_run(pid, output_pipe):
    """SIGKILL process ``pid``, every process it started (ansible's workers, the modules they run) and
    every process still holding its output pipe (inode ``output_pipe``) open, which outlived it.

    From /proc, at once: the run keeps the process group of the tests, so
    that an interrupt of the tests (Ctrl-C) still reaches it.
    """
    parent_of, holders = {}, set()
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry, encoding='utf-8') as handle:
                parent_of[int(entry)] = int(handle.read().rsplit(')', 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        for descriptor in ('1', '2'):
            try:
                if os.readlink('/proc/%s/fd/%s' % (entry, descriptor)) == 'pipe:[%d]' % output_pipe:
                    holders.add(int(entry))
            except OSError:
                pass
    doomed = {pid} | holders
    grown = True
    while grown:
        children = set(child for child, parent in parent_of.items() if parent in doomed)
        grown = not children <= doomed
        doomed |= children
    for victim in doomed:
        try:
            os.kill(victim, signal.SIGKILL)
        except ProcessLookupError:
            pass


# Simulated seconds a Reboot or Redeploy keeps its VM down, unless a test says.
RESTART_IMPACT_SECONDS = 20
# Event types whose impact deletes the VM: its host is never returned to service.
DELETING_EVENT_TYPES = ('Preempt', 'Terminate')
# How far past the earliest removal a linger skip moves the clock (simulated seconds).
LINGER_SKIP_MARGIN = 0.5


def only_lingering(events, now, impacts):
    """The events in the document when every one of them has started and its impact has ended (they only
    wait to leave it), else None. ``impacts``: ``[(real start, real end or None, vm, event id)]``."""
    visible = [event for event in events if event['status'] in ('Scheduled', 'Started')]
    if not visible or any(event['status'] != 'Started' for event in visible):
        return None
    if any(end is None for _start, end, _vm, _event_id in impacts):
        return None
    if any(parse_iso(event['impact_ends_at']) > now for event in visible):
        return None
    return visible


def seconds_past_first_removal(events, now):
    """Simulated seconds that take the clock just past the earliest removal of ``events``."""
    earliest = min(parse_iso(event['removes_at']) for event in events)
    return max(0.0, earliest - now) + LINGER_SKIP_MARGIN


def nothing_due_by(events, due, horizon):
    """Whether nothing can start by ``horizon`` (epoch): no event of ``events`` still Scheduled has its
    NotBefore by then (or none), and no scenario step (``due``: epochs) is due by then."""
    return (all(event.get('not_before') and parse_iso(event['not_before']) > horizon
                for event in events if event['status'] == 'Scheduled')
            and all(moment > horizon for moment in due))


def linger_to_skip(events, now, impacts, last_steps, managed):
    """Simulated seconds that take the clock just past the earliest lingering event's removal, or None.

    A run ends only once the events it handled have left the document, which
    Azure does about 10 minutes after they start. Once every event in the
    document has started, its impact has ended and each of its managed hosts
    is back in service (or deleted by a Preempt or Terminate), nothing is left
    to happen until the next one leaves but reads that change nothing: the
    jump skips that wait. An event still Scheduled could start during the
    jump, and a host still drained may be waiting for its event to leave (a
    restart no round saw), so either keeps the clock as it is.

    ``events``: the simulator's events; ``now``: its clock (epoch);
    ``impacts``: ``[(real start, real end or None, vm, event id)]``;
    ``last_steps``: ``{inventory host: its last recorded step}``;
    ``managed``: ``{vm name: inventory host}``.
    """
    visible = only_lingering(events, now, impacts)
    if not visible:
        return None
    for event in visible:
        if event['type'] in DELETING_EVENT_TYPES:
            continue
        for vm_name in event['resources']:
            host = managed.get(vm_name)
            if host is not None and last_steps.get(host) != 'undrain':
                return None
    return seconds_past_first_removal(visible, now)


def left_to_azure_drained(event, managed, drained):
    """Whether ``event`` names a VM outside the inventory (``managed``: its VM names), so the run never
    approves it and Azure starts it at its NotBefore, and every VM of the inventory it names is drained
    (``drained``: VM names whose hosts are out of service): nothing is left for the run to do before it starts."""
    ours = set(event['resources']) & set(managed)
    return bool(ours) and ours <= set(drained) and not set(event['resources']) <= set(managed)


def linger_to_skip_once_read(events, now, impacts, read_started, managed, clearance=math.inf, due=(), drained=()):
    """Simulated seconds that take the clock just past the earliest lingering event's removal, or None: the
    skip of ``linger_to_skip`` for runs whose steps are not recorded (the HAProxy e2e run, the AWX job).

    There a host stays drained until its event leaves the document (no round
    tells when a Freeze ends), so what makes the jump safe is that a round has
    read each event Started (``read_started``: the ids of such events): the run
    then takes its leaving for the end of its impact, as it would at Azure's
    pace, never for a cancellation. Events that name no VM of the inventory
    (``managed``: its VM names) are not the run's to read.

    An event still Scheduled, or a scenario step due (``due``: epochs), keeps
    the clock as it is unless its NotBefore (its time) comes at least
    ``clearance`` simulated seconds after the jump (by default none does, as in
    ``linger_to_skip``): it cannot start during the jump, and the run keeps
    that much time to drain its hosts (an event the run does not approve, such
    as one naming a VM outside the inventory, waits for its NotBefore, and
    until then it would hold every other event's linger). Nor does such an
    event once every VM of the inventory it names is drained (``drained``:
    VM names; ``left_to_azure_drained``), as the runs of the stages leave
    foreign VMs unapproved: the jump may take the clock past its NotBefore,
    which only starts it sooner, on hosts already out of service.
    """
    visible = only_lingering([event for event in events if event['status'] == 'Started'], now, impacts)
    if not visible:
        return None
    if any(event['id'] not in read_started for event in visible if set(event['resources']) & set(managed)):
        return None
    jump = seconds_past_first_removal(visible, now)
    holding = [event for event in events
               if not (event['status'] == 'Scheduled' and left_to_azure_drained(event, managed, drained))]
    return jump if nothing_due_by(holding, due, now + jump + clearance) else None


# Event types whose impact restarts the VM: it answers nothing until the impact ends.
RESTARTING_EVENT_TYPES = ('Reboot', 'Redeploy')
# How far past the end of a restart skip a Scheduled event's NotBefore or a
# scenario step must be (simulated seconds): the run keeps its time to act.
RESTART_SKIP_CLEARANCE = 60.0
# The playbook's round message naming the hosts whose read failed.
NO_ANSWER = re.compile(r'round \d+, no answer from ([\w.-]+(?:, [\w.-]+)*)')


def hosts_without_answer(lines):
    """Inventory hosts a round of the playbook's output says did not answer (the default callback's messages)."""
    hosts = set()
    for line in lines:
        match = NO_ANSWER.search(line)
        if match:
            hosts.update(match.group(1).split(', '))
    return hosts


def restart_to_skip(events, now, seen_down, last_steps, managed, due=()):
    """Simulated seconds that take the clock just past the earliest end of a restart a round has seen, or None.

    A Reboot or Redeploy keeps its VM down for its whole impact, long enough
    for a round to see it down even on a busy machine; once a round has (the
    planner notes that the restart began) and the host is drained, the rounds
    until the VM answers again only read that it does not. The jump skips
    them. Any impact whose hosts are not all drained, or a restart no round
    has seen yet, keeps the clock as it is; so does a removal within the jump
    (it may create the next update domain's event), and a NotBefore or a
    scenario step within RESTART_SKIP_CLEARANCE after it, which would leave
    the run less time to act. Everything later merely comes sooner, as if
    the rounds had been slow.

    ``events``: the simulator's events; ``now``: its clock (epoch);
    ``seen_down``: the inventory hosts a round has said did not answer since
    their VM's current impact began; ``last_steps``: ``{inventory
    host: its last recorded step}``; ``managed``: ``{vm name: inventory
    host}``; ``due``: epochs of scenario steps still to come.
    """
    visible = [event for event in events if event['status'] in ('Scheduled', 'Started')]
    in_impact = [event for event in visible if event['status'] == 'Started' and event.get('impact_ends_at')
                 and parse_iso(event['impact_ends_at']) > now]
    restarts = [event for event in in_impact if event['type'] in RESTARTING_EVENT_TYPES]
    if not restarts:
        return None
    for event in in_impact:
        for vm_name in event['resources']:
            host = managed.get(vm_name)
            if host is None or last_steps.get(host) != 'drain':
                return None
            if event in restarts and host not in seen_down:
                return None
    jump = min(parse_iso(event['impact_ends_at']) for event in restarts) - now + LINGER_SKIP_MARGIN
    if not nothing_due_by(visible, due, now + jump + RESTART_SKIP_CLEARANCE):
        return None
    if any(parse_iso(event['removes_at']) <= now + jump + LINGER_SKIP_MARGIN
           for event in visible if event['status'] == 'Started'):
        return None
    return jump


def seen_down_since_impact(said_down, impacts, managed):
    """The hosts a round said did not answer (``said_down``: host -> real time) after their VM's latest impact
    began (``impacts`` as RollingWorld.impacts gives them)."""
    began = {}
    for start, _end, vm_name, _event_id in impacts:
        host = managed.get(vm_name)
        if host is not None and start is not None:
            began[host] = max(began.get(host, start), start)
    return set(host for host, at in said_down.items() if host in began and at > began[host])


def scenario_steps_due(scenario):
    """Epochs of the scenario's steps still to come at a time of their own (those that wait for a removal
    come after one, which restart_to_skip keeps clear of)."""
    if not scenario or not scenario.get('started_at'):
        return []
    started = parse_iso(scenario['started_at'])
    return [started + step['at_seconds'] for step in scenario.get('steps', [])
            if not step['done'] and step.get('at_seconds') is not None]


def tasks_skipped(output):
    """``{task name: how many "skipping" lines}`` of a run's output with ANSIBLE_DISPLAY_SKIPPED_HOSTS=true.

    With the linear strategy every one of them cost a worker process.
    """
    skipped = {}
    task = None
    for line in output.splitlines():
        if line.startswith('TASK [') and ']' in line:
            task = line[len('TASK ['):line.rindex(']')]
        elif line.startswith('skipping: [') and task is not None:
            skipped[task] = skipped.get(task, 0) + 1
    return skipped


def create_step(event_id, event_type, resources, **fields):
    """A scenario step creating one event, at once unless it waits for another's removal."""
    step = {'action': 'create_event', 'label': event_id, 'event_id': event_id, 'event_type': event_type,
            'resources': resources}
    if event_type in ('Reboot', 'Redeploy'):
        # Long enough for a round to see the host down even with both cores
        # busy; the planner verifies a restarted host only after that.
        step['impact_seconds'] = RESTART_IMPACT_SECONDS
    step.update(fields)
    if 'after_removed' not in step:
        step.setdefault('at_seconds', 0)
    return step


def _epoch(text):
    return None if not text else parse_iso(text)


def impacts_of(control):
    """``[(real start, real end or None, vm, event id)]`` from the impact log of the simulator ``control`` drives."""
    starts, ends = {}, {}
    for entry in control.impacts():
        key = (entry['vm'], entry['event_id'].lower())
        (starts if entry['phase'] == 'start' else ends)[key] = _epoch(entry.get('real_time'))
    return [(at, ends.get(key), key[0], key[1]) for key, at in sorted(starts.items(), key=lambda item: item[1])]


class PlaybookRun:
    """What one ansible-playbook run left: exit code, output, report, seconds."""

    def __init__(self, returncode, output, report, seconds, started, finished):
        self.returncode = returncode
        self.output = output
        self.report = report
        self.seconds = seconds
        self.started = started
        self.finished = finished

    def event(self, event_id):
        for event in (self.report or {}).get('events', []):
            if event['event_id'].lower() == event_id.lower():
                return event
        return None


class RollingWorld:
    """A simulator with one availability set per inventory group, an inventory and a place for reports.

    ``groups``: ``{group: {'vms': [(vm name, update domain)], 'max_unavailable': ...}}``.
    ``foreign``: ``[(vm name, group it shares an availability set with)]``: VMs not in the inventory.
    ``hanging``: VM names whose IMDS accepts connections and never answers.

    A group's ``host_vars`` (optional) are set on each of its hosts, for
    example ``{'scheduled_events_remote_http': 'ansible.builtin.uri'}``, and
    its ``settings`` (optional) replace its entries of rolling_group_settings
    (which otherwise use the recording task files of ``files/``).
    With ``record_modules``, every host, and the controller as ``localhost``,
    runs its modules through an interpreter that notes each module's name
    first (see ``module_runs``).
    """

    def __init__(self, workdir, groups, foreign=(), speed=1.0, hanging=(),
                 names_in_inventory=False, forks=20, record_modules=False, skip_linger=True):
        self.workdir = os.path.abspath(str(workdir))
        self.groups = groups
        self.foreign = list(foreign)
        self.speed = speed
        self.hanging = list(hanging)
        # Whether the inventory gives each host's VM name (known before it answers).
        self.names_in_inventory = names_in_inventory
        self.forks = forks
        self.record_modules = record_modules
        # Whether runs skip the time handled events stay in the document (see
        # linger_to_skip); benchmarks keep it, as a run on Azure would.
        self.skip_linger = skip_linger
        self.simulator = None
        self.report_dir = os.path.join(self.workdir, 'reports')
        self.steps_dir = os.path.join(self.workdir, 'steps')
        self.modules_dir = os.path.join(self.workdir, 'modules')
        self.runs = 0

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc_info):
        self.stop()

    @property
    def control(self):
        return self.simulator.control

    def managed_hosts(self):
        """``{vm name: inventory host}`` of the VMs in the inventory (not the foreign ones)."""
        return dict((vm, inventory_name(vm)) for vm, group, _avset, _domain in self.vm_groups() if group)

    def vm_groups(self):
        """``[(vm name, inventory group or None, availability set, update domain)]``."""
        vms = []
        for group, spec in self.groups.items():
            for vm_name, domain in spec['vms']:
                vms.append((vm_name, group, spec.get('avset', group + '-avset'), str(domain)))
        for vm_name, group in self.foreign:
            vms.append((vm_name, None, self.groups[group].get('avset', group + '-avset'), '9'))
        return vms

    def start(self):
        os.makedirs(self.steps_dir, exist_ok=True)
        config = {
            'vms': [{'name': vm, 'listen': '127.0.0.1:0', 'group': avset, 'platformUpdateDomain': domain}
                    for vm, _group, avset, domain in self.vm_groups()],
            'speed': self.speed,
            'throttle': {'enabled': True, 'per_second': 5},
            # A command that does nothing: the simulator then logs every impact
            # start and end with its real time, which the checks read.
            'impact_command': [sys.executable, '-c', 'pass'],
            # A Reboot or Redeploy takes its VM down (IMDS resets connections)
            # for its impact, as on Azure.
            'offline_during_restart': True,
            # Azure keeps a Started event about 10 minutes; a run ends only
            # once the events it handled have left, and a restart no round saw
            # keeps its host drained until then: 1 minute here.
            'default_linger_seconds': 60,
        }
        self.simulator = SimulatorProcess(os.path.join(self.workdir, 'simulator'), config=config,
                                          extra_args=self.simulator_args()).start()
        for vm in self.hanging:
            self.hang(vm)

    def simulator_args(self):
        """Extra command-line arguments of the simulator (a subclass adds its ARM facade)."""
        return []

    def hang(self, vm, seconds=300, count=100000):
        """The VM's IMDS accepts the connection and answers nothing for ``seconds`` (a hung IMDS)."""
        self.control.add_fault('delay', vm=vm, path=None, count=count, delay_seconds=seconds)

    def stop(self):
        if self.simulator is not None:
            self.simulator.stop()
            self.simulator = None

    # -- the scenario -----------------------------------------------------------
    def start_scenario(self, steps):
        return self.control.start_scenario(steps=steps)

    # -- files for ansible-playbook ---------------------------------------------
    def write_inventory(self):
        inventory = {'all': {'children': {}}}
        for vm_name, group, _avset, _domain in self.vm_groups():
            if group is None:
                continue
            hosts = inventory['all']['children'].setdefault(group, {'hosts': {}})['hosts']
            hosts[inventory_name(vm_name)] = {
                'ansible_connection': 'local',
                'ansible_python_interpreter': sys.executable,
                'azure_scheduled_events_endpoint': self.simulator.endpoint(vm_name),
                'system_test_steps_dir': self.steps_dir,
            }
            if self.names_in_inventory:
                hosts[inventory_name(vm_name)]['azure_scheduled_events_resource_name'] = vm_name
            if self.record_modules:
                hosts[inventory_name(vm_name)].update(self._module_recorder(inventory_name(vm_name)))
            hosts[inventory_name(vm_name)].update(self.groups[group].get('host_vars') or {})
        if self.record_modules:
            # The tasks the playbook runs on the controller (delegate_to: localhost) through the recorder too.
            inventory['all']['hosts'] = {'localhost': dict(ansible_connection='local',
                                                           **self._module_recorder('localhost'))}
        path = os.path.join(self.workdir, 'inventory.json')
        with open(path, 'w', encoding='utf-8') as handle:
            json.dump(inventory, handle, indent=1)
        return path

    def _module_recorder(self, host):
        """Host variables that make ``host`` note the name of every module it runs, then run it.

        Ansible starts a module on a host as ``<interpreter> <dir>/AnsiballZ_<name>.py``
        when it does not pipeline, so an interpreter that writes down its first
        argument before handing over to Python tells which modules ran on the
        target, whatever ran them (a task, or an action plugin on the controller).
        """
        os.makedirs(self.modules_dir, exist_ok=True)
        folder = os.path.join(self.workdir, 'interpreters', host)
        os.makedirs(folder, exist_ok=True)
        wrapper = os.path.join(folder, 'python3')
        with open(wrapper, 'w', encoding='utf-8') as handle:
            handle.write('#!/bin/sh\n'
                         'case "$1" in */AnsiballZ_*) printf \'%%s\\n\' "${1##*/}" >> %s ;; esac\n'
                         'exec %s "$@"\n' % (shlex.quote(os.path.join(self.modules_dir, host + '.txt')),
                                             shlex.quote(sys.executable)))
        os.chmod(wrapper, 0o755)
        # Pipelining would hand the module over on stdin, unnamed.
        return {'ansible_python_interpreter': wrapper, 'ansible_pipelining': False}

    def module_runs(self):
        """``{inventory host: [module name, ...]}`` in the order they ran, with ``record_modules``."""
        runs = {}
        if not os.path.isdir(self.modules_dir):
            return runs
        for name in sorted(os.listdir(self.modules_dir)):
            with open(os.path.join(self.modules_dir, name), encoding='utf-8') as handle:
                runs[name[:-len('.txt')]] = [line.strip()[len('AnsiballZ_'):-len('.py')]
                                             for line in handle if line.strip().endswith('.py')]
        return runs

    def extra_vars(self, **overrides):
        settings = dict((group, {'max_unavailable': spec.get('max_unavailable', 1),
                                 'drain_tasks': os.path.join(FILES, 'record_drain.yml'),
                                 'verify_tasks': os.path.join(FILES, 'record_verify.yml'),
                                 'undrain_tasks': os.path.join(FILES, 'record_undrain.yml')})
                        for group, spec in self.groups.items())
        for group, spec in self.groups.items():
            settings[group].update(spec.get('settings') or {})
        extra = {
            'maintenance_groups': list(self.groups),
            'rolling_group_settings': settings,
            'rolling_settle_seconds': 3,
            # Faster than the default 5 s, so a step follows the one before
            # soon; every round reads every host, so a round each second
            # would mostly spend CPU on rounds where nothing changes.
            'rolling_poll_interval_seconds': 2,
            'rolling_time_budget_seconds': 600,
            'rolling_observe_timeout_seconds': 20,
            # The simulated clock runs ahead of the controller's, so NotBefore
            # looks further away than it is: drain events we cannot approve at once.
            'rolling_drain_lead_seconds': 10 ** 7,
            'rolling_report_dir': self.report_dir,
        }
        extra.update(overrides)
        return extra

    def ansible_env(self):
        env = dict(os.environ)
        env.update(ANSIBLE_CONFIG=ANSIBLE_TEST_CONFIG,
                   ANSIBLE_COLLECTIONS_PATH=collections_path(self.workdir), ANSIBLE_FORKS=str(self.forks),
                   ANSIBLE_HOST_KEY_CHECKING='False', ANSIBLE_NOCOLOR='1', ANSIBLE_RETRY_FILES_ENABLED='False',
                   ANSIBLE_LOCALHOST_WARNING='False', ANSIBLE_DEPRECATION_WARNINGS='False',
                   ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_DISPLAY_OK_HOSTS='false',
                   ANSIBLE_DISPLAY_SKIPPED_HOSTS='false', ANSIBLE_LOCAL_TEMP=os.path.join(self.workdir, 'tmp'))
        for name in ('http_proxy', 'https_proxy', 'HTTP_PROXY', 'HTTPS_PROXY', 'all_proxy', 'ALL_PROXY'):
            env.pop(name, None)
        return env

    def run_playbook(self, extra_args=(), timeout=600, echo=False, env=None, **overrides):
        """Run the playbook to its end (bounded by ``timeout`` seconds); return a PlaybookRun.

        ``env``: environment variables to set (a value of None removes one) for this run.
        """
        self.runs += 1
        inventory = self.write_inventory()
        extra_path = os.path.join(self.workdir, 'extra_vars_%d.json' % self.runs)
        with open(extra_path, 'w', encoding='utf-8') as handle:
            json.dump(self.extra_vars(**overrides), handle, indent=1)
        before = set(os.listdir(self.report_dir)) if os.path.isdir(self.report_dir) else set()
        command = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', inventory, PLAYBOOK,
                   '-e', '@' + extra_path] + list(extra_args)
        started = time.time()
        log_path = self.latest_log_path()
        run_env = self.ansible_env()
        for name, value in (env or {}).items():
            if value is None:
                run_env.pop(name, None)
            else:
                run_env[name] = value
        finished_running = threading.Event()
        skipper = None
        if self.skip_linger:
            skipper = threading.Thread(target=self._skip_lingering, args=(finished_running, timeout, log_path))
            skipper.start()
        try:
            returncode = run_streaming(command, run_env, self.workdir, log_path, timeout=timeout, echo=echo)
        finally:
            finished_running.set()
            if skipper is not None:
                skipper.join(30)
        with open(log_path, encoding='utf-8') as handle:
            lines = handle.readlines()
        finished = time.time()
        report = None
        new = sorted(name for name in (os.listdir(self.report_dir) if os.path.isdir(self.report_dir) else [])
                     if name.endswith('.json') and name not in before)
        if new:
            with open(os.path.join(self.report_dir, new[-1]), encoding='utf-8') as handle:
                report = json.load(handle)
        return PlaybookRun(returncode, ''.join(lines), report, finished - started, started, finished)

    def _skip_lingering(self, finished_running, timeout, log_path):
        """While a run goes on, move the clock past what the run only waits for: lingering events it is done
        with (linger_to_skip) and the rest of restarts a round has seen (restart_to_skip)."""
        managed = self.managed_hosts()
        deadline = time.monotonic() + timeout
        said_down = {}
        read_up_to = 0
        while not finished_running.wait(0.5) and time.monotonic() < deadline:
            read_up_to = self._note_hosts_without_answer(log_path, read_up_to, said_down)
            last_steps = dict((host, entries[-1][1]) for host, entries in self.steps().items() if entries)
            state = self.control.state()
            events, now = state['events'], state['clock']['epoch']
            impacts = self.impacts()
            seconds = linger_to_skip(events, now, impacts, last_steps, managed)
            if seconds is None:
                seconds = restart_to_skip(events, now, seen_down_since_impact(said_down, impacts, managed),
                                          last_steps, managed, due=scenario_steps_due(state.get('scenario')))
            if seconds is not None:
                self.control.advance_clock(seconds)

    @staticmethod
    def _note_hosts_without_answer(log_path, offset, said_down):
        """Note (in ``said_down``: host -> real time) the hosts the run's new complete lines say did not
        answer; returns the offset read up to."""
        try:
            with open(log_path, 'rb') as handle:
                handle.seek(offset)
                data = handle.read()
        except OSError:
            return offset
        complete = data[:data.rfind(b'\n') + 1]
        now = time.time()
        for host in hosts_without_answer(complete.decode('utf-8', 'replace').splitlines()):
            said_down[host] = now
        return offset + len(complete)

    def run_playbook_watched(self, watch, timeout=600, **kwargs):
        """Run the playbook (``kwargs`` as run_playbook takes them) while calling ``watch()`` about once a
        second, until it returns true or the run ends; returns the PlaybookRun.

        For a test that acts on the world (moves the clock, changes an
        event) once the run has got somewhere, whatever the time that took.
        """
        runs, runs_before = [], self.runs
        player = threading.Thread(target=lambda: runs.append(self.run_playbook(timeout=timeout, **kwargs)))
        player.start()
        deadline = time.monotonic() + timeout
        # Not before the run has begun: output_so_far() would be an earlier run's.
        while player.is_alive() and time.monotonic() < deadline and not (self.runs > runs_before and watch()):
            time.sleep(1)
        player.join(timeout)
        assert runs, 'the playbook run did not end within %d s' % timeout
        return runs[0]

    def run_playbook_passing_notice(self, approvable, drained_host, timeout=1500, **overrides):
        """Run the playbook; once every event of ``approvable`` is approved and ``drained_host`` drained (its
        only step so far), move the simulated clock just past Azure's notice, so that the events the run
        must not approve start. Returns the PlaybookRun.

        The clock runs at real speed until then, so how fast this machine is
        does not decide whether an event can be drained in time.
        """
        approvable = set(event_id.lower() for event_id in approvable)

        def pass_the_notice_once_ready():
            drained = [step for _at, step in self.steps().get(drained_host, [])] == ['drain']
            if drained and approvable <= set(self.approvals_per_event()):
                self.control.advance_clock(self.seconds_past_every_not_before())
                return True
            return False

        return self.run_playbook_watched(pass_the_notice_once_ready, timeout=timeout, **overrides)

    def latest_log_path(self):
        """The file the latest playbook run writes its output to."""
        return os.path.join(self.workdir, 'playbook_%d.log' % self.runs)

    def output_so_far(self):
        """What the latest playbook run (running or ended) has printed so far."""
        try:
            with open(self.latest_log_path(), encoding='utf-8') as handle:
                return handle.read()
        except OSError:
            return ''

    def seconds_past_every_not_before(self, margin=2.0):
        """Simulated seconds from now to just past the latest NotBefore of the Scheduled events.

        Jumping just that far starts them without also carrying them past
        their linger time, so that a round still sees them Started.
        """
        now = self.control.clock()['epoch']
        not_befores = [parse_iso(event['not_before']) for event in self.control.events()
                       if event['status'] == 'Scheduled' and event.get('not_before')]
        return max([0.0] + [not_before - now for not_before in not_befores]) + margin

    # -- what happened ----------------------------------------------------------
    def approvals_per_event(self):
        """``{event id in lower case: how many approvals of it succeeded}``."""
        counts = {}
        for _at, _vm, event_ids in self.approvals():
            for event_id in event_ids:
                counts[event_id] = counts.get(event_id, 0) + 1
        return counts

    def steps(self):
        """``{inventory host: [(real time, 'drain'|'verify'|'undrain')]}`` from the step records."""
        steps = {}
        for name in sorted(os.listdir(self.steps_dir)):
            for entry in read_complete_lines(os.path.join(self.steps_dir, name)):
                steps.setdefault(entry['host'], []).append((float(entry['at']), entry['step']))
        for entries in steps.values():
            entries.sort()
        return steps

    def drained_at(self, host, moment):
        """Whether ``host`` was drained (its last step before ``moment`` was a drain or a verify)."""
        last = None
        for at, step in self.steps().get(host, []):
            if at > moment:
                break
            last = step
        return last in ('drain', 'verify')

    def impacts(self):
        """``[(real start, real end or None, vm, event id)]`` from the simulator's impact log."""
        return impacts_of(self.control)

    def approvals(self):
        """``[(real time, vm, [event ids])]`` of the successful approvals."""
        return [(_epoch(entry.get('real_time')), entry['vm'], [item.lower() for item in entry['event_ids']])
                for entry in self.control.approvals() if entry.get('status') == 200]

    def events(self):
        return dict((event['id'].lower(), event) for event in self.control.events())

    def scheduled_events_reads(self, vm=None):
        """Real times, in order, of the reads of Scheduled Events the simulator answered (of ``vm``'s, or every VM's)."""
        return sorted(_epoch(entry['real_time']) for entry in self.control.log(since=0, vm=vm)
                      if entry['method'] == 'GET' and entry['path'].startswith('/metadata/scheduledevents'))

    def invariant_problems(self, run):
        """Every broken safety rule, as sentences; an empty list when the run was safe.

        - no impact on a managed host that was not drained, unless the report says why;
        - no approval of an event naming a VM outside the inventory;
        - max_unavailable never exceeded, counting drained and impacted hosts;
        - every approval after all the hosts of the event were drained;
        - no host verified or returned to service while an impact on it runs.
        """
        problems = []
        managed = self.managed_hosts()
        group_of = dict((inventory_name(vm), group) for vm, group, _avset, _domain in self.vm_groups() if group)
        events = self.events()
        explained = set()
        for event in (run.report or {}).get('events', []):
            if event['outcome'] in ('started_undrained', 'started_without_notice', 'left_undrained', 'not_handled'):
                explained.add(event['event_id'].lower())
        impacts = self.impacts()
        for start, _end, vm, event_id in impacts:
            host = managed.get(vm)
            if host and not self.drained_at(host, start) and event_id not in explained:
                problems.append('%s (%s) was impacted by %s at %.3f without being drained, and the report does '
                                'not say why' % (host, vm, event_id, start))
        steps = self.steps()
        for start, end, vm, event_id in impacts:
            host = managed.get(vm)
            for at, step in steps.get(host, []) if host else []:
                if step in ('verify', 'undrain') and start <= at and (end is None or at < end):
                    problems.append('%s was %s at %.3f while %s impacted it (%.3f to %s)'
                                    % (host, 'verified' if step == 'verify' else 'returned to service', at,
                                       event_id, start, 'not ended' if end is None else '%.3f' % end))
        for at, vm, event_ids in self.approvals():
            for event_id in event_ids:
                event = events.get(event_id)
                if event is None:
                    continue
                outsiders = [name for name in event['resources'] if name not in managed]
                if outsiders:
                    problems.append('%s was approved (by %s) though it names %s, outside the inventory'
                                    % (event_id, vm, ', '.join(outsiders)))
                for name in event['resources']:
                    host = managed.get(name)
                    if host and not self.drained_at(host, at):
                        problems.append('%s was approved at %.3f before %s was drained' % (event_id, at, host))
        problems.extend(self._budget_problems(impacts, group_of, managed))
        return problems

    def _budget_problems(self, impacts, group_of, managed):
        """Hosts out at once per group, at every moment something changed."""
        limits = {}
        for group, spec in self.groups.items():
            size = len(spec['vms'])
            value = spec.get('max_unavailable', 1)
            if isinstance(value, str) and value.endswith('%'):
                limits[group] = max(1, int(float(value[:-1]) * size / 100.0 + 1e-9))
            else:
                limits[group] = int(value)
        steps = self.steps()
        # A Preempt or Terminate deletes the VM: from its start on, the host
        # has left the group rather than being out of it.
        kinds = dict((event_id, event['type']) for event_id, event in self.events().items())
        deleted = dict((managed[vm], start) for start, _end, vm, event_id in impacts
                       if vm in managed and kinds.get(event_id) in DELETING_EVENT_TYPES)
        moments = sorted(set([at for entries in steps.values() for at, _step in entries]
                             + [start for start, _end, _vm, _id in impacts]))
        problems = []
        for moment in moments:
            out = dict((group, set()) for group in self.groups)
            for host in group_of:
                if host in deleted and deleted[host] <= moment:
                    continue
                if self.drained_at(host, moment):
                    out[group_of[host]].add(host)
            for start, end, vm, _event_id in impacts:
                host = managed.get(vm)
                if host and host in deleted and deleted[host] <= moment:
                    continue
                if host and start <= moment and (end is None or moment < end):
                    out[group_of[host]].add(host)
            for group, hosts in out.items():
                if len(hosts) > limits[group]:
                    problems.append('group %s had %d hosts out at %.3f (%s), max_unavailable %d'
                                    % (group, len(hosts), moment, ', '.join(sorted(hosts)), limits[group]))
        return problems
