#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""scheduled_events_info against ansible.builtin.uri, whole playbook wall time.

20 inventory hosts (ansible_connection=local), each pointing at its own VM of
the IMDS simulator, run one task: either scheduled_events_info or
ansible.builtin.uri doing the same GET with the same headers (Metadata: true,
no proxy). The module is given resource_name so that it also makes that one
request; the default, which also asks the instance metadata for the VM name,
is measured too and printed for information. Runs alternate between the
variants after one warm-up each, so drift hits all alike.

Target: median(info) / median(uri) at most 1.10. The figures are printed with
whether the target is met; the script does not fail on the target.

Run alone:  .venv/bin/python tests/benchmarks/bench_info_vs_uri.py [--runs 5] [--hosts 20] [--forks 5]
It starts its own simulator on free loopback ports and stops it at the end.
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO_ROOT, 'tests', 'simulator'))
from imds_simulator.process import SimulatorProcess  # noqa: E402 pylint: disable=wrong-import-position

TARGET_RATIO = 1.10
API_VERSION = '2020-07-01'
# Bounds every wait of the script so a broken simulator or play cannot hang CI.
PLAYBOOK_TIME_LIMIT = 300

PLAYBOOKS = {
    'uri': '''
- hosts: vms
  gather_facts: false
  tasks:
    - name: The same GET with the same headers
      ansible.builtin.uri:
        url: "{{ se_endpoint }}?api-version=%(api)s"
        headers:
          Metadata: "true"
        use_proxy: false
        return_content: true
      register: document
''' % {'api': API_VERSION},
    'info': '''
- hosts: vms
  gather_facts: false
  tasks:
    - name: Read the events
      azure_maintenance.scheduled_events.scheduled_events_info:
        endpoint: "{{ se_endpoint }}"
        api_version: "%(api)s"
        resource_name: "{{ se_vm }}"
      register: document
''' % {'api': API_VERSION},
    'info (name discovery)': '''
- hosts: vms
  gather_facts: false
  tasks:
    - name: Read the events and learn the VM name from IMDS
      azure_maintenance.scheduled_events.scheduled_events_info:
        endpoint: "{{ se_endpoint }}"
        api_version: "%(api)s"
      register: document
''' % {'api': API_VERSION},
}


def write(path, text):
    with open(path, 'w') as handle:
        handle.write(text)


def collection_tree(workdir):
    """An ansible_collections tree whose azure_maintenance.scheduled_events is this checkout."""
    namespace = os.path.join(workdir, 'collections', 'ansible_collections', 'azure_maintenance')
    os.makedirs(namespace)
    os.symlink(REPO_ROOT, os.path.join(namespace, 'scheduled_events'))
    return os.path.join(workdir, 'collections')


def post_json(url, payload):
    request = urllib.request.Request(url, data=json.dumps(payload).encode('utf-8'), method='POST',
                                     headers={'Content-Type': 'application/json'})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=30) as response:
        return json.loads(response.read().decode('utf-8') or 'null')


class Simulator(object):
    """The IMDS simulator in the background, with one VM per inventory host, on ports the kernel chooses."""

    def __init__(self, workdir, hosts):
        names = ['bench_%d' % index for index in range(hosts)]
        self.process = SimulatorProcess(workdir, config={
            'vms': [{'name': name, 'listen': '127.0.0.1:0', 'group': 'bench'} for name in names],
            # Each host has its own VM, so each stays far below the real throttle; keep it on, as on Azure.
            'throttle': {'enabled': True, 'per_second': 5},
            'first_call_delay_seconds': 0,
        }, extra_args=['--log-level', 'WARNING'])
        self.names = names
        self.vms = []
        self.control_url = None

    def start(self):
        self.process.start()
        self.control_url = self.process.control_url
        self.vms = [(name, 'http://%s/metadata/scheduledevents' % self.process.ready['vms'][name])
                    for name in self.names]
        # A document with content, as in a maintenance window: one Freeze for the first five VMs.
        post_json(self.control_url + '/events', {'event_type': 'Freeze', 'resources': self.names[:5]})

    def stop(self):
        self.process.stop()


def ansible_playbook_command():
    candidate = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    return candidate if os.path.exists(candidate) else shutil.which('ansible-playbook')


def run_playbook(command, playbook, inventory, env, forks):
    started = time.perf_counter()
    completed = subprocess.run([command, '-i', inventory, '-f', str(forks), playbook], env=env, check=False,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=PLAYBOOK_TIME_LIMIT)
    elapsed = time.perf_counter() - started
    output = completed.stdout.decode('utf-8', 'replace')
    if completed.returncode != 0 or 'failed=0' not in output:
        raise RuntimeError('%s failed (rc %d):\n%s' % (playbook, completed.returncode, output[-3000:]))
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--runs', type=int, default=5, help='measured runs per variant (default 5)')
    parser.add_argument('--hosts', type=int, default=20, help='inventory hosts (default 20)')
    parser.add_argument('--forks', type=int, default=5, help='ansible forks (default 5, as ansible.cfg)')
    args = parser.parse_args()
    if args.runs < 1 or args.hosts < 1 or args.forks < 1:
        parser.error('--runs, --hosts and --forks must be 1 or more')
    command = ansible_playbook_command()
    if not command:
        print('ERROR: ansible-playbook not found next to %s nor on PATH; run with the venv python' % sys.executable,
              file=sys.stderr)
        return 1

    workdir = tempfile.mkdtemp(prefix='se-bench-')
    simulator = Simulator(workdir, args.hosts)
    try:
        simulator.start()
        inventory = os.path.join(workdir, 'inventory.ini')
        lines = ['[vms]']
        for index, (name, endpoint) in enumerate(simulator.vms):
            lines.append('host%02d se_vm=%s se_endpoint=%s' % (index, name, endpoint))
        lines += ['', '[vms:vars]', 'ansible_connection=local', 'ansible_python_interpreter=%s' % sys.executable]
        write(inventory, '\n'.join(lines) + '\n')
        playbooks = {}
        for variant, text in PLAYBOOKS.items():
            playbooks[variant] = os.path.join(workdir, '%s.yml' % variant.split()[0] + ('_discovery' if '(' in variant else ''))
            write(playbooks[variant], text)
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collection_tree(workdir), ANSIBLE_HOST_KEY_CHECKING='False',
                   ANSIBLE_RETRY_FILES_ENABLED='False', ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='False')
        for proxy in ('http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY'):
            env.pop(proxy, None)

        print('info vs uri: %d hosts (local connection, one simulator VM each), forks %d, %d runs per variant after '
              'one warm-up' % (args.hosts, args.forks, args.runs))
        print('method: whole ansible-playbook wall time per run, variants alternating so load drifts hit both; '
              'figure = median(info) / median(uri), uri being the baseline doing the same GET')
        timings = dict((variant, []) for variant in PLAYBOOKS)
        for variant in PLAYBOOKS:
            run_playbook(command, playbooks[variant], inventory, env, args.forks)
        for dummy in range(args.runs):
            for variant in PLAYBOOKS:
                timings[variant].append(run_playbook(command, playbooks[variant], inventory, env, args.forks))
    except (subprocess.SubprocessError, RuntimeError, OSError) as exc:
        print('ERROR: %s' % exc, file=sys.stderr)
        return 1
    finally:
        simulator.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    medians = dict((variant, statistics.median(values)) for variant, values in timings.items())
    for variant, values in timings.items():
        print('  %-22s median %.3f s   runs: %s' % (variant, medians[variant], ', '.join('%.3f' % v for v in values)))
    ratio = medians['info'] / medians['uri']
    verdict = 'MET' if ratio <= TARGET_RATIO else 'NOT MET'
    print('ratio median(info) / median(uri) = %.3f; target <= %.2f -> %s' % (ratio, TARGET_RATIO, verdict))
    print('for information: median(info with name discovery) / median(uri) = %.3f'
          % (medians['info (name discovery)'] / medians['uri']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
