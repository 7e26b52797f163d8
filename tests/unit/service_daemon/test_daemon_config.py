# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every setting is validated once, when the configuration is read; secrets can live outside it."""

import json
import os

import pytest

from se_service.config import RANGES, ConfigError, load_config, validate_config, webhook_headers

WEBHOOK = {'url': 'https://hooks.example.com/se'}


@pytest.fixture
def config_dir(tmp_path):
    os.chmod(str(tmp_path), 0o755)
    return tmp_path


def _write(path, text, mode=0o644):
    with open(str(path), 'w') as handle:
        handle.write(text)
    os.chmod(str(path), mode)
    return str(path)


@pytest.mark.parametrize('key', sorted(RANGES))
@pytest.mark.parametrize('value', [float('nan'), float('inf'), float('-inf'), 1e12, -1, True, '10', None])
def test_every_duration_must_be_a_finite_number_in_its_range(key, value):
    section, dummy, name = key.rpartition('.')
    given = {name: value} if not section else {section: {name: value}}
    if section == 'webhook':
        given['webhook'].update(WEBHOOK)
    if value is None:
        validate_config(given)  # null means the default
        return
    with pytest.raises(ConfigError) as caught:
        validate_config(given)
    assert key in str(caught.value)


@pytest.mark.parametrize('key', sorted(RANGES))
def test_the_bounds_of_each_range_are_accepted(key):
    section, dummy, name = key.rpartition('.')
    for bound in RANGES[key]:
        given = {name: bound} if not section else {section: dict({name: bound}, **(WEBHOOK if section == 'webhook' else {}))}
        config = validate_config(given)
        assert (config[section] if section else config)[name] == float(bound)


@pytest.mark.parametrize('value', [-1, 0, 0.2])
def test_a_poll_interval_out_of_range_names_the_range_it_must_be_in(value):
    with pytest.raises(ConfigError) as caught:
        validate_config({'poll_interval': value})
    assert str(caught.value) == ('poll_interval must be from 0.25 to 60 seconds; more often, IMDS would throttle the '
                                 'VM (about 5 requests a second, shared by every client on it), got %r' % (value,))


@pytest.mark.parametrize('text', ['{"hook_timeout": NaN}', '{"timeout": Infinity}', '{"poll_interval": -Infinity}'])
def test_nan_and_infinity_are_refused_when_the_file_is_read(config_dir, text):
    path = _write(config_dir / 'config.json', text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert 'is not a JSON number' in str(caught.value) and path in str(caught.value)


def test_webhook_redirects_and_proxy_are_off_unless_asked():
    webhook = validate_config({'webhook': WEBHOOK})['webhook']
    assert webhook['follow_redirects'] is False and webhook['proxy'] is None
    with pytest.raises(ConfigError, match='webhook.follow_redirects must be true or false'):
        validate_config({'webhook': dict(WEBHOOK, follow_redirects='yes')})
    with pytest.raises(ConfigError, match='webhook.proxy must be an http'):
        validate_config({'webhook': dict(WEBHOOK, proxy='socks5://127.0.0.1:1080')})


def test_headers_file_adds_secret_headers_and_must_be_private(config_dir):
    secret = _write(config_dir / 'headers.json', json.dumps({'Authorization': 'Bearer s3cret'}), 0o600)
    config_path = _write(config_dir / 'config.json', json.dumps(
        {'webhook': dict(WEBHOOK, headers={'X-Team': 'ops'}, headers_file=secret)}))
    headers = load_config(config_path)['webhook']['headers']
    assert headers == {'X-Team': 'ops', 'Authorization': 'Bearer s3cret'}
    os.chmod(secret, 0o644)
    with pytest.raises(ConfigError, match='readable by everyone and holds secrets; run: chmod 0600'):
        load_config(config_path)
    os.chmod(secret, 0o620)
    with pytest.raises(ConfigError, match='writable by group'):
        load_config(config_path)


def test_systemd_credential_wins_over_the_headers_file(config_dir):
    credentials = config_dir / 'credentials'
    credentials.mkdir()
    _write(credentials / 'webhook-headers', json.dumps({'Authorization': 'from credential'}), 0o400)
    secret = _write(config_dir / 'headers.json', json.dumps({'Authorization': 'from file'}), 0o600)
    webhook = validate_config({'webhook': dict(WEBHOOK, headers_file=secret,
                                               headers_credential='webhook-headers')})['webhook']
    assert webhook_headers(webhook, {'CREDENTIALS_DIRECTORY': str(credentials)}) == {'Authorization': 'from credential'}
    # Not under systemd (--check run by the role): the file stands in.
    assert webhook_headers(webhook, {}) == {'Authorization': 'from file'}
    without_file = dict(webhook, headers_file=None)
    with pytest.raises(ConfigError, match='LoadCredential=webhook-headers:FILE'):
        webhook_headers(without_file, {})


@pytest.mark.parametrize('name', ['', '../etc/shadow', '.', 42])
def test_credential_names_are_plain_names(name):
    with pytest.raises(ConfigError, match='headers_credential must be the name of a systemd credential'):
        validate_config({'webhook': dict(WEBHOOK, headers_credential=name)})


def test_headers_file_must_hold_one_line_string_headers(config_dir):
    secret = _write(config_dir / 'headers.json', json.dumps({'Authorization': 'a\r\nX-Injected: 1'}), 0o600)
    webhook = validate_config({'webhook': dict(WEBHOOK, headers_file=secret)})['webhook']
    with pytest.raises(ConfigError, match='must not contain line breaks'):
        webhook_headers(webhook, {})


def test_a_staged_copy_is_checked_without_its_folder(tmp_path):
    # Ansible's validate step runs on a copy in the temporary folder of the
    # user it logs in as (become: root), owned by root by then; the folder is
    # that user's. The copy must pass; the same folder must still fail the
    # check of an installed configuration.
    if os.geteuid() != 0:
        pytest.skip('needs root to give the folder to another user')
    folder = tmp_path / 'ansible-tmp-1-2'
    folder.mkdir(mode=0o700)
    path = _write(folder / 'source', json.dumps({'poll_interval': 2}), 0o600)
    os.chown(str(folder), 65534, 65534)
    assert load_config(path, staged=True)['poll_interval'] == 2
    with pytest.raises(ConfigError, match='owned by uid 65534'):
        load_config(path)
    os.chmod(path, 0o666)
    with pytest.raises(ConfigError, match='writable by group and others'):
        load_config(path, staged=True)


def test_staged_goes_with_check_only(capsys):
    from se_service.cli import parse_arguments
    assert parse_arguments(['--check', '--staged']).staged is True
    with pytest.raises(SystemExit):
        parse_arguments(['--staged'])
    assert '--staged goes with --check only' in capsys.readouterr().err


@pytest.mark.parametrize('api_version, noted', [('2099-01-01', True), ('2020-07-01', False), ('2017-11-01', False)])
def test_check_notes_an_api_version_this_release_does_not_know(config_dir, capsys, api_version, noted):
    # Well formed, so accepted (Azure may publish new versions), but IMDS
    # refuses one it does not have at every poll: --check says so up front.
    from se_service.cli import EXIT_OK, run_check
    hooks = config_dir / 'hooks.d'
    hooks.mkdir(mode=0o755)
    path = _write(config_dir / 'config.json', json.dumps({
        'api_version': api_version, 'hooks_dir': str(hooks), 'state_file': str(config_dir / 'state.json')}))
    assert run_check(path) == EXIT_OK
    out = capsys.readouterr().out
    assert 'configuration OK' in out
    assert ('note: api-version %s is not one this release knows' % api_version in out) is noted
    if noted:
        assert '2020-07-01' in out and 'keep it only if Azure has published it' in out
