# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The daemon's configuration file: defaults, validation, trust.

The file is JSON (the role renders it from its variables). Every error names
the key and says what to put there.
"""

import copy
import ipaddress
import json
import math
import os
from urllib.parse import urlsplit

from .core._se_client import DEFAULT_ENDPOINT, validate_api_version, validate_endpoint
from .core._se_document import DEFAULT_API_VERSION
from .core._se_errors import InvalidParameterError
from .policy import validate_policy
from .core._se_wait import MIN_POLL_INTERVAL, validate_poll_interval

from . import logs
from .security import InsecureFileError, check_trusted

DEFAULT_CONFIG_PATH = '/etc/scheduled-events-service/config.json'
PHASES = ('prepare', 'started', 'recover')

DEFAULTS = {
    'endpoint': DEFAULT_ENDPOINT,
    'api_version': DEFAULT_API_VERSION,
    'poll_interval': 1.0,
    'timeout': 10.0,
    'resource_name': None,
    'hooks_dir': '/etc/scheduled-events-service/hooks',
    'hook_timeout': 300.0,
    'hooks_for_other_vms': False,
    'state_file': '/var/lib/scheduled-events-service/state.json',
    'approval': {'rules': [], 'default_action': 'never', 'leader_only': False},
    'metrics': {'textfile': None, 'listen': None, 'textfile_interval': 15.0},
    'webhook': {'url': None, 'headers': {}, 'headers_file': None, 'headers_credential': None, 'retries': 3,
                'timeout': 5.0, 'follow_redirects': False, 'proxy': None},
    'event_log': None,
    'log': {'format': 'auto', 'level': 'info'},
}


class ConfigError(Exception):
    """The configuration cannot be used; the message names the key and the fix."""


# Sections whose keys are checked one by one; other mappings (approval,
# webhook.headers) are taken whole and validated by their own code.
_SECTIONS = ('metrics', 'webhook', 'log')


def _merge(defaults, given, where):
    if not isinstance(given, dict):
        raise ConfigError('%s must be a JSON object' % (where or 'the configuration'))
    if not where:
        # JSON has no comments: top-level keys starting with "_" serve instead.
        given = dict((key, value) for key, value in given.items() if not key.startswith('_'))
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        prefix = where + ': ' if where else ''
        raise ConfigError('%sunknown key(s) %s; allowed: %s' % (prefix, ', '.join(unknown), ', '.join(sorted(defaults))))
    merged = copy.deepcopy(defaults)
    for key, value in given.items():
        if not where and key in _SECTIONS and value is not None:
            merged[key] = _merge(defaults[key], value, (where + '.' if where else '') + key)
        elif value is not None:
            merged[key] = value
    return merged


# Seconds: (smallest, largest) each setting accepts. The upper bounds keep
# the daemon useful - a Preempt gives 30 s of notice, most events 5 to 15
# minutes - and keep every sum and sleep made of them far from overflow.
RANGES = {
    'poll_interval': (MIN_POLL_INTERVAL, 60),
    'timeout': (0.1, 300),
    'hook_timeout': (1, 3600),
    'metrics.textfile_interval': (1, 3600),
    'webhook.timeout': (0.1, 300),
}
# Why a range is what it is, where its message should say.
RANGE_REASONS = {
    'poll_interval': 'more often, IMDS would throttle the VM (about 5 requests a second, shared by every client on it)',
}
# Where systemd puts the credentials of LoadCredential= (systemd.exec(5)).
CREDENTIALS_VARIABLE = 'CREDENTIALS_DIRECTORY'


def _number(config, key, where=None):
    value = config[key]
    name = (where + '.' if where else '') + key
    minimum, maximum = RANGES[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError('%s must be a number of seconds, got %r' % (name, value))
    if not math.isfinite(value) or not minimum <= value <= maximum:
        reason = RANGE_REASONS.get(name)
        raise ConfigError('%s must be from %s to %s seconds%s, got %r'
                          % (name, minimum, maximum, '; ' + reason if reason else '', value))
    return float(value)


def _refuse_constant(name):
    raise ConfigError('%s is not a JSON number; write a number of seconds such as 10' % name)


def _absolute_path(value, name, optional=False):
    if value is None and optional:
        return None
    if not isinstance(value, str) or not os.path.isabs(value):
        raise ConfigError('%s must be an absolute path, got %r' % (name, value))
    return os.path.normpath(value)


def validate_loopback_listen(value):
    """``(host, port)`` of a loopback ``HOST:PORT``; anything reachable from outside is refused."""
    if not isinstance(value, str) or ':' not in value:
        raise ConfigError('metrics.listen must be HOST:PORT on loopback, e.g. 127.0.0.1:9839, got %r' % (value,))
    host, port_text = value.rsplit(':', 1)
    host = host.strip('[]')
    if host == 'localhost':
        host = '127.0.0.1'
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ConfigError('metrics.listen %r is not a loopback address: the metrics port only listens on 127.0.0.0/8 '
                          'or ::1; use 127.0.0.1:PORT, or metrics.textfile for node_exporter' % (value,))
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ConfigError('metrics.listen %r has no valid port' % (value,))
    return host, int(port_text)


def _http_url(value, name):
    parts = urlsplit(str(value))
    if parts.scheme not in ('http', 'https') or not parts.hostname:
        raise ConfigError('%s must be an http:// or https:// URL, got %r' % (name, value))
    return value


def validate_headers(headers, where):
    """``headers`` if it maps header names to one-line string values, else ConfigError naming ``where``."""
    if not isinstance(headers, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise ConfigError('%s must map header names to string values' % where)
    for name, value in headers.items():
        if '\n' in name or '\r' in name or '\n' in value or '\r' in value:
            raise ConfigError('%s: header %r must not contain line breaks' % (where, name))
    return headers


def _validate_webhook(webhook):
    if webhook['url'] is None:
        return webhook
    _http_url(webhook['url'], 'webhook.url')
    validate_headers(webhook['headers'], 'webhook.headers')
    webhook['headers_file'] = _absolute_path(webhook['headers_file'], 'webhook.headers_file', optional=True)
    credential = webhook['headers_credential']
    if credential is not None and not (isinstance(credential, str) and credential
                                       and '/' not in credential and credential not in ('.', '..')):
        raise ConfigError('webhook.headers_credential must be the name of a systemd credential (LoadCredential=NAME:...), '
                          'got %r' % (credential,))
    retries = webhook['retries']
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 20:
        raise ConfigError('webhook.retries must be a whole number from 0 to 20, got %r' % (retries,))
    webhook['timeout'] = _number(webhook, 'timeout', 'webhook')
    if not isinstance(webhook['follow_redirects'], bool):
        raise ConfigError('webhook.follow_redirects must be true or false')
    if webhook['proxy'] is not None:
        _http_url(webhook['proxy'], 'webhook.proxy')
    return webhook


def _read_headers_file(path, where):
    try:
        info = check_trusted(path)
    except InsecureFileError as exc:
        raise ConfigError('refusing %s: %s' % (where, exc))
    if info.st_mode & 0o004:
        raise ConfigError('%s %s is readable by everyone and holds secrets; run: chmod 0600 %s' % (where, path, path))
    try:
        with open(path) as handle:
            headers = json.load(handle, parse_constant=_refuse_constant)
    except ValueError as exc:
        raise ConfigError('%s %s is not a JSON object of headers: %s' % (where, path, exc))
    except OSError as exc:
        raise ConfigError('%s %s cannot be read: %s' % (where, path, exc.strerror or exc))
    return validate_headers(headers, '%s %s' % (where, path))


def webhook_headers(webhook, environment=None):
    """The webhook's headers: ``headers`` with those of the credential or the headers file on top.

    The systemd credential (``$CREDENTIALS_DIRECTORY/<headers_credential>``)
    wins when systemd provided it; otherwise ``headers_file`` is read. Both
    keep secrets out of the configuration file.
    """
    environment = os.environ if environment is None else environment
    headers = dict(webhook['headers'])
    credentials = environment.get(CREDENTIALS_VARIABLE)
    credential = webhook.get('headers_credential')
    if credential and credentials and os.path.exists(os.path.join(credentials, credential)):
        headers.update(_read_headers_file(os.path.join(credentials, credential), 'the credential'))
    elif webhook.get('headers_file'):
        headers.update(_read_headers_file(webhook['headers_file'], 'webhook.headers_file'))
    elif credential:
        raise ConfigError('webhook.headers_credential %r was not provided: run the service under systemd with '
                          'LoadCredential=%s:FILE, or set webhook.headers_file' % (credential, credential))
    return headers


def validate_config(given):
    """Return the complete configuration with defaults, or raise ConfigError."""
    config = _merge(DEFAULTS, given, '')
    try:
        validate_endpoint(config['endpoint'])
        validate_api_version(config['api_version'])
        config['poll_interval'] = validate_poll_interval(_number(config, 'poll_interval'))
        config['approval'] = validate_policy(config['approval'])
    except InvalidParameterError as exc:
        raise ConfigError(exc.message)
    config['timeout'] = _number(config, 'timeout')
    config['hook_timeout'] = _number(config, 'hook_timeout')
    if config['resource_name'] is not None and not (isinstance(config['resource_name'], str) and config['resource_name']):
        raise ConfigError('resource_name must be the VM name as IMDS lists it in Resources, or null to ask IMDS')
    if not isinstance(config['hooks_for_other_vms'], bool):
        raise ConfigError('hooks_for_other_vms must be true or false')
    config['hooks_dir'] = _absolute_path(config['hooks_dir'], 'hooks_dir')
    config['state_file'] = _absolute_path(config['state_file'], 'state_file')
    config['event_log'] = _absolute_path(config['event_log'], 'event_log', optional=True)
    metrics = config['metrics']
    metrics['textfile'] = _absolute_path(metrics['textfile'], 'metrics.textfile', optional=True)
    if metrics['textfile'] is not None and not metrics['textfile'].endswith('.prom'):
        raise ConfigError('metrics.textfile must end in .prom, the node_exporter textfile collector ignores other files')
    if metrics['listen'] is not None:
        validate_loopback_listen(metrics['listen'])
    metrics['textfile_interval'] = _number(metrics, 'textfile_interval', 'metrics')
    config['webhook'] = _validate_webhook(config['webhook'])
    if config['log']['format'] not in logs.FORMATS:
        raise ConfigError('log.format must be one of %s, got %r' % (', '.join(logs.FORMATS), config['log']['format']))
    if config['log']['level'] not in logs.LEVELS:
        raise ConfigError('log.level must be one of %s, got %r' % (', '.join(logs.LEVELS), config['log']['level']))
    return config


def load_config(path, staged=False):
    """Read, trust-check and validate the configuration file at ``path``.

    ``staged``: the file is a copy on its way to its place (Ansible's
    ``validate`` step): the file itself must be trusted, its folder need not
    be, as that is the temporary folder of whoever Ansible logs in as.
    """
    try:
        check_trusted(path)
        if not staged:
            check_trusted(os.path.dirname(os.path.abspath(path)), expect_directory=True)
    except InsecureFileError as exc:
        raise ConfigError('refusing the configuration: %s' % exc)
    try:
        with open(path) as handle:
            given = json.load(handle, parse_constant=_refuse_constant)
    except ConfigError as exc:
        raise ConfigError('%s: %s' % (path, exc))
    except ValueError as exc:
        raise ConfigError('%s is not valid JSON: %s' % (path, exc))
    except OSError as exc:
        raise ConfigError('%s cannot be read: %s' % (path, exc.strerror or exc))
    try:
        config = validate_config(given)
        if config['webhook']['url']:
            config['webhook']['headers'] = webhook_headers(config['webhook'])
    except ConfigError as exc:
        raise ConfigError('%s: %s' % (path, exc))
    return config
