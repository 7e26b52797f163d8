# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running the IMDS simulator and a real ansible-rulebook, for the EDA end-to-end test and benchmark.

Every wait is bounded and every process started here is stopped by the
context manager that started it, by its own pid or process group.
"""

import datetime
import getpass
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import yaml

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE_FQCN = 'azure_maintenance.scheduled_events.scheduled_events'
JAVA_PACKAGE = 'openjdk-17-jre-headless'
NO_JVM_PERF_DATA = '-XX:-UsePerfData'
# The ansible settings every ansible run of the tests shares: see its comments.
ANSIBLE_TEST_CONFIG = os.path.join(REPO_ROOT, 'tests', 'integration', 'integration.cfg')

sys.path.insert(0, os.path.join(REPO_ROOT, 'tests', 'simulator'))
from imds_simulator.process import SimulatorProcess, SimulatorStartError, ends_with_this_process  # noqa: E402  pylint: disable=wrong-import-position


class HarnessError(Exception):
    """Something the end-to-end set-up needs is missing or did not come up; the message says what to do."""


def wait_until(predicate, timeout, what, interval=0.1):
    """Return ``predicate()``'s first truthy value, or raise HarnessError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise HarnessError('%s did not happen within %.0f s' % (what, timeout))
        time.sleep(interval)


# --- prerequisites -------------------------------------------------------------------------------------------

def without_jvm_perf_data(env):
    """``env`` for a JVM that keeps no performance data: a JVM keeps it in /tmp/hsperfdata_<user>/<pid>
    whatever TMPDIR says, and leaves that folder behind; the tests need none of it."""
    return dict(env, JAVA_TOOL_OPTIONS=(env.get('JAVA_TOOL_OPTIONS', '') + ' ' + NO_JVM_PERF_DATA).strip())


def java_works():
    java = os.path.join(os.environ['JAVA_HOME'], 'bin', 'java') if os.environ.get('JAVA_HOME') else shutil.which('java')
    if not java:
        return False
    result = subprocess.run([java, '-version'], capture_output=True, text=True, timeout=60, check=False,
                            env=without_jvm_perf_data(os.environ))
    match = re.search(r'version "(\d+)', result.stderr)
    return result.returncode == 0 and match is not None and int(match.group(1)) >= 17


def ensure_java():
    """ansible-rulebook's rule engine (drools) runs in a Java 17 JVM: install one with apt when missing."""
    if java_works():
        return
    if os.geteuid() != 0 or not shutil.which('apt-get'):
        raise HarnessError('ansible-rulebook needs a Java 17 runtime and none was found. Install it: '
                           'sudo apt-get install -y %s (Debian/Ubuntu) or set JAVA_HOME.' % JAVA_PACKAGE)
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    for command in (['apt-get', 'update', '-q'],
                    ['apt-get', 'install', '-y', '-q', '--no-install-recommends', JAVA_PACKAGE]):
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=False)
        if result.returncode != 0:
            raise HarnessError('%s failed:\n%s' % (' '.join(command), result.stderr[-2000:]))
    if not java_works():
        raise HarnessError('%s was installed but java -version still fails; set JAVA_HOME' % JAVA_PACKAGE)


def venv_bin():
    return os.path.dirname(sys.executable)


def rulebook_command():
    """The ansible-rulebook executable of this Python environment."""
    candidate = os.path.join(venv_bin(), 'ansible-rulebook')
    if os.access(candidate, os.X_OK):
        return candidate
    found = shutil.which('ansible-rulebook')
    if found:
        return found
    raise HarnessError('ansible-rulebook is not installed in %s: pip install ansible-rulebook '
                       '(see tests/requirements and docs/eda_and_awx.md)' % venv_bin())


# Stands in for azure_maintenance.scheduled_events.rolling_maintenance, which
# the maintenance rulebook reaches by FQCN: it records what the rule gave it.
RECORDING_ROLLING_PLAYBOOK = '''---
- name: Record how the rule started the rolling maintenance
  hosts: all
  gather_facts: false
  tasks:
    - name: Write the record
      ansible.builtin.copy:
        dest: "{{ record_dir }}/{{ ansible_eda.event.scheduled_event.event_id }}-{{ inventory_hostname }}.json"
        content: "{{ {'host': inventory_hostname, 'limit': ansible_limit | default(''),
                      'maintenance_groups': maintenance_groups | default(None),
                      'scheduled_event': ansible_eda.event.scheduled_event} | to_json }}"
        mode: '0644'
'''


# --- the collection as ansible-rulebook sees it -----------------------------------------------------------

def make_collection_tree(parent, extra_playbooks=None):
    """Lay the checkout out as an installed collection under ``parent``; return the collection's path.

    ``extra_playbooks`` ({file name: YAML text}) are added to the collection's
    playbooks/ directory (the real ones stay visible), so a test can stand in
    for a playbook that rules reach by FQCN.
    """
    collection = os.path.join(parent, 'ansible_collections', 'azure_maintenance', 'scheduled_events')
    os.makedirs(os.path.dirname(collection))
    if not extra_playbooks:
        os.symlink(REPO_ROOT, collection)
        return collection
    os.makedirs(collection)
    for entry in os.listdir(REPO_ROOT):
        if entry not in ('playbooks', '.git', '.venv', 'build'):
            os.symlink(os.path.join(REPO_ROOT, entry), os.path.join(collection, entry))
    playbooks = os.path.join(collection, 'playbooks')
    os.makedirs(playbooks)
    real_playbooks = os.path.join(REPO_ROOT, 'playbooks')
    for entry in os.listdir(real_playbooks) if os.path.isdir(real_playbooks) else []:
        if entry not in extra_playbooks:
            os.symlink(os.path.join(real_playbooks, entry), os.path.join(playbooks, entry))
    for name, text in extra_playbooks.items():
        with open(os.path.join(playbooks, name), 'w', encoding='utf-8') as handle:
            handle.write(text)
    return collection


def write_yaml(path, data):
    with open(path, 'w', encoding='utf-8') as handle:
        yaml.safe_dump(data, handle, default_flow_style=False)
    return path


# --- the simulator --------------------------------------------------------------------------------------------

def simulator_world(vm_names, group='westno'):
    """A simulator config with ``vm_names`` in one availability set, each on a port the kernel chooses."""
    return {'vms': [{'name': name, 'listen': '127.0.0.1:0', 'group': group} for name in vm_names]}


class Simulator(object):
    """The IMDS simulator in the background, on free ports, with its files in ``work_dir``; stopped on exit."""

    def __init__(self, work_dir, vm_names=('WestNO_0', 'WestNO_1'), name='eda'):
        self.vm_names = list(vm_names)
        self.process = SimulatorProcess(work_dir, config=simulator_world(self.vm_names), name='simulator-%s' % name)
        self.control = None
        self.world = None

    def endpoint(self, vm_name):
        return 'http://%s/metadata/scheduledevents' % self.process.ready['vms'][vm_name]

    def __enter__(self):
        try:
            self.process.start()
        except SimulatorStartError as exc:
            raise HarnessError('the IMDS simulator did not start: %s' % exc) from None
        self.control = self.process.control
        # Resets keep the ports chosen at start, so endpoints stay valid.
        self.world = simulator_world(self.vm_names)
        for vm in self.world['vms']:
            vm['listen'] = self.process.ready['vms'][vm['name']]
        return self

    def reset(self):
        self.control.reset(self.world)

    def __exit__(self, *exc_info):
        self.process.stop()

    def polls_of(self, vm_name):
        return [entry for entry in self.control.log(vm=vm_name)
                if 'scheduledevents' in entry.get('path', '') and entry.get('method') == 'GET']

    def approvals_of(self, event_id):
        return [approval for approval in self.control.approvals()
                if event_id.lower() in [str(approved).lower() for approved in approval.get('event_ids') or []]]


# --- ansible-rulebook -----------------------------------------------------------------------------------------

DEBUG_BANNER = re.compile(r'^\*\* (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) \[debug\] \*+$')


class Rulebook(object):
    """A real ansible-rulebook in a subprocess (its own process group), stopped on exit."""

    def __init__(self, work_dir, rulebook, collections_parent, inventory, variables, name='rulebook'):
        self.work_dir = work_dir
        self.output_path = os.path.join(work_dir, '%s.out' % name)
        vars_path = write_yaml(os.path.join(work_dir, '%s-vars.yml' % name), variables)
        inventory_path = write_yaml(os.path.join(work_dir, '%s-inventory.yml' % name), inventory)
        self.command = [rulebook_command(), '--rulebook', rulebook, '--inventory', inventory_path,
                        '--vars', vars_path, '--verbose']
        # ansible-rulebook gives every action an ansible-runner folder in the
        # temporary folder and leaves it there: the test's own, not $TMPDIR.
        temporary = os.path.join(work_dir, '%s-tmp' % name)
        os.makedirs(temporary, exist_ok=True)
        self.env = without_jvm_perf_data(dict(
            os.environ, ANSIBLE_CONFIG=ANSIBLE_TEST_CONFIG, ANSIBLE_COLLECTIONS_PATH=collections_parent,
            ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0', PYTHONUNBUFFERED='1', TMPDIR=temporary,
            PATH=venv_bin() + os.pathsep + os.environ.get('PATH', '')))
        self.process = None
        self._output = None
        self.returncode = None
        self.stop_seconds = None

    def __enter__(self):
        self._output = open(self.output_path, 'w', encoding='utf-8')
        self.process = subprocess.Popen(self.command, cwd=self.work_dir, env=self.env, stdout=self._output,
                                        stderr=subprocess.STDOUT, start_new_session=True,
                                        preexec_fn=ends_with_this_process())
        return self

    def output(self):
        with open(self.output_path, encoding='utf-8', errors='replace') as handle:
            return handle.read()

    def jvm_perf_data_path(self):
        """Where the JVM of the running ansible-rulebook would keep its performance data (hard-wired to /tmp)."""
        return os.path.join('/tmp', 'hsperfdata_' + getpass.getuser(), str(self.process.pid))

    def check_running(self):
        if self.process.poll() is not None:
            raise HarnessError('ansible-rulebook exited with %s:\n%s' % (self.process.returncode, self.output()[-4000:]))

    def debug_messages(self):
        """``[(epoch seconds, message)]`` of every debug action printed so far."""
        lines = self.output().splitlines()
        messages = []
        for index, line in enumerate(lines):
            match = DEBUG_BANNER.match(line.strip())
            if match and index + 1 < len(lines):
                # ansible-rulebook stamps its banners with the local time.
                stamp = datetime.datetime.strptime(match.group(1), '%Y-%m-%d %H:%M:%S.%f').timestamp()
                messages.append((stamp, lines[index + 1].strip()))
        return messages

    def stop(self, timeout=20.0):
        """Interrupt ansible-rulebook as Ctrl-C would; kill its process group if it does not end in time."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else None
        started = time.monotonic()
        os.killpg(self.process.pid, signal.SIGINT)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        self.stop_seconds = time.monotonic() - started
        return self.process.returncode

    def __exit__(self, *exc_info):
        try:
            self.returncode = self.stop()
        finally:
            # The process group also holds the ansible-playbook runs it started.
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._output.close()


def local_inventory(endpoints_by_host):
    """An inventory whose hosts run locally, each with its own simulated IMDS endpoint."""
    return {'all': {'hosts': {host: {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
                                     'azure_scheduled_events_endpoint': endpoint}
                              for host, endpoint in endpoints_by_host.items()}}}
