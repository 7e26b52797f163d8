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
import os
from urllib.parse import urlsplit

from se_core._se_client import DEFAULT_ENDPOINT, validate_api_version, validate_endpoint
from se_core._se_document import DEFAULT_API_VERSION
from se_core._se_errors import InvalidParameterError
from se_core._se_policy import validate_policy
from se_core._se_wait import validate_poll_interval

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
    'webhook': {'url': None, 'headers': {}, 'retries': 3, 'timeout': 5.0},
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


def _number(config, key, minimum, where=None):
    value = config[key]
    name = (where + '.' if where else '') + key
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError('%s must be a number, got %r' % (name, value))
    if value < minimum:
        raise ConfigError('%s must be at least %s, got %s' % (name, minimum, value))
    return float(value)


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


def _validate_webhook(webhook):
    if webhook['url'] is None:
        return webhook
    parts = urlsplit(str(webhook['url']))
    if parts.scheme not in ('http', 'https') or not parts.hostname:
        raise ConfigError('webhook.url must be an http:// or https:// URL, got %r' % (webhook['url'],))
    headers = webhook['headers']
    if not isinstance(headers, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise ConfigError('webhook.headers must map header names to string values')
    for name, value in headers.items():
        if '\n' in name or '\r' in name or '\n' in value or '\r' in value:
            raise ConfigError('webhook.headers %r must not contain line breaks' % name)
    retries = webhook['retries']
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 20:
        raise ConfigError('webhook.retries must be a whole number from 0 to 20, got %r' % (retries,))
    webhook['timeout'] = _number(webhook, 'timeout', 0.1, 'webhook')
    return webhook


def validate_config(given):
    """Return the complete configuration with defaults, or raise ConfigError."""
    config = _merge(DEFAULTS, given, '')
    try:
        validate_endpoint(config['endpoint'])
        validate_api_version(config['api_version'])
        config['poll_interval'] = validate_poll_interval(_number(config, 'poll_interval', 0))
        config['approval'] = validate_policy(config['approval'])
    except InvalidParameterError as exc:
        raise ConfigError(exc.message)
    config['timeout'] = _number(config, 'timeout', 0.1)
    config['hook_timeout'] = _number(config, 'hook_timeout', 1)
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
    metrics['textfile_interval'] = _number(metrics, 'textfile_interval', 1, 'metrics')
    config['webhook'] = _validate_webhook(config['webhook'])
    if config['log']['format'] not in logs.FORMATS:
        raise ConfigError('log.format must be one of %s, got %r' % (', '.join(logs.FORMATS), config['log']['format']))
    if config['log']['level'] not in logs.LEVELS:
        raise ConfigError('log.level must be one of %s, got %r' % (', '.join(logs.LEVELS), config['log']['level']))
    return config


def load_config(path):
    """Read, trust-check and validate the configuration file at ``path``."""
    try:
        check_trusted(path)
        check_trusted(os.path.dirname(os.path.abspath(path)), expect_directory=True)
    except InsecureFileError as exc:
        raise ConfigError('refusing the configuration: %s' % exc)
    try:
        with open(path) as handle:
            given = json.load(handle)
    except ValueError as exc:
        raise ConfigError('%s is not valid JSON: %s' % (path, exc))
    except OSError as exc:
        raise ConfigError('%s cannot be read: %s' % (path, exc.strerror or exc))
    try:
        return validate_config(given)
    except ConfigError as exc:
        raise ConfigError('%s: %s' % (path, exc))
