# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""System test: the rolling playbook over a mixed fleet, Linux hosts and hosts on the Windows path.

No Windows host can be had here, so the "Windows" group takes every layer of
the Windows path that can run on Linux: the action plugins run the modules'
code on the controller and send each IMDS request from the target through an
HTTP module (``scheduled_events_remote_http: ansible.builtin.uri`` forces
``ansible.builtin.uri`` where a PowerShell target would get
``ansible.windows.win_uri``), and the group verifies with the shipped
``windows_http_health_check.yml``. The other group runs the Python modules on
the target (``scheduled_events_remote_http: module``, as over SSH). Both groups share one availability set, as Linux and Windows VMs
may, so each sees the other's events, and one event names a VM of each.

Checked: the invariants of tests/rolling (rolling_harness.invariant_problems),
each approvable event approved once and the foreign one never, and which path
each host really took, from two records that do not depend on the code under
test: the modules each host ran (an interpreter that notes them) and the
requests the simulator received (``ansible.builtin.uri`` sends
``Connection: close``; the core's own transport keeps the connection open).

Run: .venv/bin/python -m pytest tests/rolling/test_mixed_fleet.py -v
"""

import http.server
import os
import sys
import threading
import time
from urllib.parse import parse_qs, urlsplit

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rolling_harness import FILES, RollingWorld, create_step, inventory_name  # noqa: E402 pylint: disable=wrong-import-position

pytestmark = pytest.mark.skipif(sys.platform != 'linux', reason='needs the simulator and ansible-playbook locally')

FREEZE_WIN0_AND_LIN0 = 'E5000000-0000-4000-8000-000000000001'
REBOOT_WIN1 = 'E5000000-0000-4000-8000-000000000002'
USER_REDEPLOY_LIN1 = 'E5000000-0000-4000-8000-000000000003'
FREEZE_WIN2_AND_OUTSIDER = 'E5000000-0000-4000-8000-000000000004'
APPROVABLE = (FREEZE_WIN0_AND_LIN0, REBOOT_WIN1, USER_REDEPLOY_LIN1)

LINUX_VMS = ['lin_0', 'lin_1']
WINDOWS_PATH_VMS = ['win_0', 'win_1', 'win_2']
# Modules the playbook itself may run on a Windows host: none of its own, only
# what the action plugins send (the HTTP module) and wait_for_connection's ping
# (win_ping there). The test's own step recorder (files/record_*.yml) uses
# ansible.builtin.raw, which starts no module.
WINDOWS_PATH_MODULES = {'uri', 'ping'}
PYTHON_MODULES = {'scheduled_events_info', 'scheduled_events_approve'}


class HealthPage:
    """A web page on a port the kernel chooses that answers 200 and notes which host it was asked about."""

    def __init__(self):
        asked = self.asked = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                asked.append((time.time(), parse_qs(urlsplit(self.path).query).get('host', [''])[0]))
                self.send_response(200)
                self.send_header('Content-Length', '2')
                self.end_headers()
                self.wfile.write(b'ok')

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self):
        return 'http://127.0.0.1:%d/health' % self.server.server_address[1]

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc_info):
        self.server.shutdown()
        self.server.server_close()


def mixed_groups(health_url, remote_http_group='windows'):
    """The fleet: ``remote_http_group`` takes the Windows path (the other group the Python modules)."""
    # One availability set for both groups. In the Windows-path group one
    # slot is held by the host of the event naming an outside VM (drained,
    # never approved) until its NotBefore, so its other events take turns
    # in the other slot; the Linux group has one slot for its two events.
    avset = 'mixed-avset'
    groups = {
        'linux': {'vms': [('lin_0', 0), ('lin_1', 1)], 'max_unavailable': 1, 'avset': avset},
        'windows': {'vms': [('win_0', 0), ('win_1', 1), ('win_2', 2)], 'max_unavailable': 2, 'avset': avset,
                    'host_vars': {'system_test_health_url': health_url},
                    'settings': {'verify_tasks': os.path.join(FILES, 'record_verify_windows.yml')}},
    }
    groups[remote_http_group].setdefault('host_vars', {})['scheduled_events_remote_http'] = 'ansible.builtin.uri'
    # The other group runs the Python modules on the target, as over SSH: on
    # a local connection (every host here) the action plugins would otherwise
    # run the module's code in the controller's worker, with no module to see.
    other = [name for name in groups if name != remote_http_group][0]
    groups[other].setdefault('host_vars', {})['scheduled_events_remote_http'] = 'module'
    return groups


def requests_by_vm(world):
    requests = {}
    for entry in world.control.log(since=0):
        if entry.get('vm'):
            requests.setdefault(entry['vm'], []).append(entry)
    return requests


def path_problems(world):
    """Every host that did not take the path its group asks for, as sentences."""
    problems = []
    runs = world.module_runs()
    requests = requests_by_vm(world)
    for vm in WINDOWS_PATH_VMS:
        host = inventory_name(vm)
        ran = runs.get(host, [])
        if not ran.count('uri'):
            problems.append('%s ran no ansible.builtin.uri: its IMDS requests did not go through the remote-HTTP '
                            'path' % host)
        if set(ran) - WINDOWS_PATH_MODULES:
            problems.append('%s ran %s on the target, which a Windows host could not'
                            % (host, ', '.join(sorted(set(ran) - WINDOWS_PATH_MODULES))))
        kept_open = [entry['seq'] for entry in requests.get(vm, [])
                     if entry['headers'].get('Connection', '').lower() != 'close']
        if kept_open:
            problems.append('%s: requests %s did not come from ansible.builtin.uri' % (vm, kept_open))
        # Each uri run sends one request at most; more requests than runs
        # would mean something else asked this VM's IMDS.
        if len(requests.get(vm, [])) > ran.count('uri'):
            problems.append('%s received %d requests but %s ran uri %d times'
                            % (vm, len(requests.get(vm, [])), host, ran.count('uri')))
    for vm in LINUX_VMS:
        host = inventory_name(vm)
        ran = runs.get(host, [])
        if 'scheduled_events_info' not in ran or 'uri' in ran:
            problems.append('%s should have run the Python module and never uri; it ran %s'
                            % (host, ', '.join(sorted(set(ran))) or 'nothing'))
        closed = [entry['seq'] for entry in requests.get(vm, [])
                  if entry['headers'].get('Connection', '').lower() == 'close']
        if closed:
            problems.append('%s: requests %s came from ansible.builtin.uri, not the Python module' % (vm, closed))
        if not requests.get(vm):
            problems.append('%s received no request' % vm)
    return problems


def test_the_path_checks_see_hosts_on_the_wrong_path(tmp_path):
    """The checks of path_problems fail when the groups swap paths (so their passing above means something)."""
    with HealthPage() as health, \
            RollingWorld(tmp_path, mixed_groups(health.url, remote_http_group='linux'), record_modules=True) as world:
        run = world.run_playbook(timeout=600, rolling_settle_seconds=1)
        assert run.returncode == 0, run.output[-3000:]
        problems = '\n'.join(path_problems(world))
        for vm in WINDOWS_PATH_VMS:
            assert '%s ran no ansible.builtin.uri' % inventory_name(vm) in problems, problems
            assert '%s ran scheduled_events_info on the target' % inventory_name(vm) in problems, problems
            assert '%s: requests [' % vm in problems, problems
        for vm in LINUX_VMS:
            assert '%s should have run the Python module and never uri' % inventory_name(vm) in problems, problems
            assert '%s: requests [' % vm in problems and 'came from ansible.builtin.uri' in problems, problems


def test_a_mixed_linux_and_windows_path_fleet_with_overlapping_events(tmp_path):
    with HealthPage() as health, \
            RollingWorld(tmp_path, mixed_groups(health.url), foreign=[('partner_0', 'windows')], speed=1,
                         record_modules=True) as world:
        world.start_scenario([
            # The Windows-path VM leads: its approval is a POST through uri.
            create_step(FREEZE_WIN0_AND_LIN0, 'Freeze', ['win_0', 'lin_0']),
            create_step(REBOOT_WIN1, 'Reboot', ['win_1']),
            create_step(USER_REDEPLOY_LIN1, 'Redeploy', ['lin_1'], event_source='User'),
            create_step(FREEZE_WIN2_AND_OUTSIDER, 'Freeze', ['win_2', 'partner_0']),
        ])
        # Each request of a Windows-path host is one module run on the target
        # (about a second over WinRM, several on this shared machine), and an
        # approval takes a few: a bound on one host's read or approval that
        # a busy machine cannot reach, so that the report's account of each
        # approval does not depend on this machine's load. Module starts are
        # what this run costs (every request of a Windows-path host is a uri
        # run, about 0.3 CPU-s), so its rounds are as far apart as the
        # playbook's default makes them (5 s), not the 2 s of other scenarios.
        run = world.run_playbook_passing_notice(APPROVABLE, inventory_name('win_2'),
                                                rolling_observe_timeout_seconds=120, rolling_poll_interval_seconds=5)

        problems = world.invariant_problems(run) + path_problems(world)
        assert problems == [], '\n'.join(problems) + '\n' + run.output[-3000:]
        assert run.returncode == 0, run.output[-3000:]
        counts = world.approvals_per_event()
        assert dict((event_id, counts.get(event_id.lower())) for event_id in APPROVABLE) == \
            dict((event_id, 1) for event_id in APPROVABLE)
        assert FREEZE_WIN2_AND_OUTSIDER.lower() not in counts
        foreign = run.event(FREEZE_WIN2_AND_OUTSIDER)
        assert foreign['outcome'] == 'foreign' and foreign['foreign_resources'] == ['partner_0']
        # Approvals by Windows-path VMs, each a POST that came through uri.
        approvers = dict((event_id, vm) for _at, vm, ids in world.approvals() for event_id in ids)
        assert approvers[FREEZE_WIN0_AND_LIN0.lower()] == 'win_0'
        assert approvers[REBOOT_WIN1.lower()] == 'win_1'
        assert approvers[USER_REDEPLOY_LIN1.lower()] == 'lin_1'
        posts = dict((vm, [entry for entry in entries if entry['method'] == 'POST'])
                     for vm, entries in requests_by_vm(world).items())
        assert posts['win_0'] and posts['win_1'] and posts['lin_1']
        assert 'scheduled_events_approve' in world.module_runs()[inventory_name('lin_1')]
        # The report is written by the worker that runs the task (rolling_report): the only modules run on the
        # controller are the Windows verify's health checks (uri, delegated to it).
        assert set(world.module_runs().get('localhost', [])) <= {'uri'}, world.module_runs().get('localhost')
        for event_id in APPROVABLE:
            assert run.event(event_id)['outcome'] == 'approved'
            assert run.event(event_id)['times']['verified'] and run.event(event_id)['times']['undrained']
        # The shipped Windows verify asked each verified Windows-path host's page before the verify was recorded.
        windows_hosts = set(inventory_name(vm) for vm in WINDOWS_PATH_VMS)
        for host, steps in world.steps().items():
            for at, step in steps:
                if step == 'verify' and host in windows_hosts:
                    assert any(name == host and asked <= at for asked, name in health.asked), (host, health.asked)
        assert health.asked and set(name for _asked, name in health.asked) <= windows_hosts
        for host, steps in world.steps().items():
            assert steps[-1][1] == 'undrain', (host, steps)
