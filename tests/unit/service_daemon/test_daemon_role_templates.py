# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The role's unit and configuration, rendered from its defaults: hardened, verified, secret-free."""

import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

ansible_template = pytest.importorskip('ansible.template')
from ansible.parsing.dataloader import DataLoader  # noqa: E402  (after the skip above)

ROLE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'roles',
                                     'scheduled_events_service'))
# The exposure systemd-analyze security gave the unit before it was hardened
# (6.1 MEDIUM); the hardened one must stay well below.
EXPOSURE_LIMIT = 4.0
SECRET = 'Bearer not-for-config-json'


def _trusted(value):
    """Role variables as Ansible sees them: strings from the role's own files are templates."""
    if isinstance(value, str):
        return ansible_template.trust_as_template(value)
    if isinstance(value, dict):
        return dict((key, _trusted(item)) for key, item in value.items())
    if isinstance(value, list):
        return [_trusted(item) for item in value]
    return value


def render(template, **overrides):
    variables = {}
    for name in ('defaults/main.yml', 'vars/main.yml'):
        with open(os.path.join(ROLE, name)) as handle:
            variables.update(_trusted(yaml.safe_load(handle)))
    variables.update(role_path=ROLE, ansible_managed='Ansible managed', ansible_facts={'service_mgr': 'systemd'})
    variables.update(overrides)
    with open(os.path.join(ROLE, 'templates', template)) as handle:
        source = handle.read()
    templar = ansible_template.Templar(loader=DataLoader(), variables=variables)
    return templar.template(ansible_template.trust_as_template(source))


def directives(unit_text):
    found = {}
    for line in unit_text.splitlines():
        if '=' in line and not line.startswith('#'):
            key, value = line.split('=', 1)
            found.setdefault(key, []).append(value)
    return found


def test_the_unit_drops_capabilities_and_filters_system_calls():
    unit = directives(render('scheduled-events-service.service.j2'))
    capabilities = unit['CapabilityBoundingSet'][0].split()
    assert capabilities and all(name.startswith('CAP_') for name in capabilities)
    for dangerous in ('CAP_SYS_ADMIN', 'CAP_SYS_MODULE', 'CAP_SYS_PTRACE', 'CAP_SYS_RAWIO', 'CAP_SYS_BOOT',
                      'CAP_BPF', 'CAP_MKNOD', 'CAP_NET_RAW', 'CAP_LINUX_IMMUTABLE'):
        assert dangerous not in capabilities
    assert unit['SystemCallFilter'] == ['@system-service'] and unit['SystemCallErrorNumber'] == ['EPERM']
    assert unit['NoNewPrivileges'] == ['yes'] and unit['PrivateDevices'] == ['yes']
    assert unit['RestartPreventExitStatus'] == ['2']
    assert 'LoadCredential' not in unit


def test_secret_headers_reach_the_unit_as_a_credential_and_never_config_json():
    headers = {'Authorization': SECRET}
    overrides = dict(scheduled_events_service_webhook_url='https://hooks.example.com/se',
                     scheduled_events_service_webhook_headers=headers)
    unit = directives(render('scheduled-events-service.service.j2', **overrides))
    assert unit['LoadCredential'] == ['webhook-headers:/etc/scheduled-events-service/webhook-headers.json']
    config_text = render('config.json.j2', **overrides)
    assert SECRET not in config_text
    webhook = json.loads(config_text)['webhook']
    assert webhook['headers'] == {} and webhook['headers_credential'] == 'webhook-headers'
    assert webhook['headers_file'] == '/etc/scheduled-events-service/webhook-headers.json'
    assert webhook['follow_redirects'] is False and webhook['proxy'] is None


def test_an_external_headers_file_is_used_as_given():
    overrides = dict(scheduled_events_service_webhook_url='https://hooks.example.com/se',
                     scheduled_events_service_webhook_headers_file='/run/secrets/se-headers.json')
    unit = directives(render('scheduled-events-service.service.j2', **overrides))
    assert unit['LoadCredential'] == ['webhook-headers:/run/secrets/se-headers.json']
    assert json.loads(render('config.json.j2', **overrides))['webhook']['headers_file'] == '/run/secrets/se-headers.json'


@pytest.fixture
def systemd_analyze():
    path = shutil.which('systemd-analyze')
    if path is None:
        pytest.skip('systemd-analyze is not installed: the unit cannot be verified here')
    return path


@pytest.mark.parametrize('overrides', [{}, {'scheduled_events_service_webhook_headers': {'Authorization': SECRET}}])
def test_systemd_verifies_the_unit_and_rates_its_exposure_low(systemd_analyze, tmp_path, overrides):
    path = tmp_path / 'scheduled-events-service.service'
    path.write_text(render('scheduled-events-service.service.j2', **overrides))
    verify = subprocess.run([systemd_analyze, 'verify', str(path)], capture_output=True, text=True, timeout=60,
                            check=False)
    complaints = [line for line in verify.stderr.splitlines() if 'scheduled-events-service' in line]
    assert verify.returncode == 0 and not complaints, verify.stderr
    security = subprocess.run([systemd_analyze, 'security', '--offline=true', '--no-pager', str(path)],
                              capture_output=True, text=True, timeout=60, check=False, cwd=str(tmp_path))
    match = re.search(r'Overall exposure level for \S+: ([0-9.]+)', security.stdout + security.stderr)
    assert match, security.stdout + security.stderr
    assert float(match.group(1)) <= EXPOSURE_LIMIT, security.stdout


@pytest.mark.parametrize('overrides', [{}, {'scheduled_events_service_webhook_url': 'https://hooks.example.com/se',
                                            'scheduled_events_service_webhook_headers': {'Authorization': SECRET},
                                            'scheduled_events_service_webhook_proxy': 'http://127.0.0.1:3128'}])
def test_the_rendered_configuration_is_one_the_daemon_accepts(overrides):
    from se_service.config import validate_config
    validate_config(json.loads(render('config.json.j2', **overrides)))


def test_the_role_refuses_the_hook_names_the_service_skips():
    # A hook the role installs under a name the service skips would never run.
    from se_service.hooks import _IGNORED_SUFFIXES
    with open(os.path.join(ROLE, 'vars', 'main.yml')) as handle:
        endings = yaml.safe_load(handle)['_scheduled_events_service_skipped_hook_endings']
    assert tuple(endings) == _IGNORED_SUFFIXES


@pytest.mark.parametrize('name, usable', [('10-drain', True), ('10-drain.bak', False), ('10-drain~', False),
                                          ('10-drain.dpkg-old', False), ('backup', True), ('10.orig.sh', True)])
def test_the_role_check_of_hook_names_follows_the_service(name, usable):
    with open(os.path.join(ROLE, 'tasks', 'preflight.yml')) as handle:
        tasks = yaml.safe_load(handle)
    check = next(task for task in tasks if task['name'] == 'Check the hooks')
    condition = next(text for text in check['ansible.builtin.assert']['that']
                     if '_scheduled_events_service_skipped_hook_endings' in text)
    with open(os.path.join(ROLE, 'vars', 'main.yml')) as handle:
        variables = _trusted({'_scheduled_events_service_skipped_hook_endings':
                              yaml.safe_load(handle)['_scheduled_events_service_skipped_hook_endings']})
    variables['item'] = {'phase': 'prepare', 'name': name, 'content': 'x'}
    templar = ansible_template.Templar(loader=DataLoader(), variables=variables)
    result = templar.template(ansible_template.trust_as_template('{{ %s }}' % condition))
    assert result is usable
