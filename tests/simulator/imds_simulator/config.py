"""Reading and checking the simulator's JSON configuration.

Every check raises ConfigError with the path of the offending field
(``vms[1].listen``) so a user can fix the file without reading the code.
"""

import copy
import ipaddress
import json
import uuid

from .clock import check_speed, parse_iso

__all__ = ['ConfigError', 'DEFAULT_CONFIG', 'load_config_file', 'validate_config', 'validate_vm',
           'parse_listen', 'is_any_port', 'format_listen', 'vm_identity']

DEFAULT_SUBSCRIPTION = '8d10da13-8125-4ba9-a717-bf7490507b3d'
DEFAULT_RESOURCE_GROUP = 'rg-westno'
DEFAULT_GROUP = 'westno-avset'

DEFAULT_CONFIG = {
    'vms': [
        {'name': 'WestNO_0', 'listen': '127.0.0.1:18101', 'group': DEFAULT_GROUP,
         'platformUpdateDomain': '0', 'platformFaultDomain': '0'},
        {'name': 'WestNO_1', 'listen': '127.0.0.1:18102', 'group': DEFAULT_GROUP,
         'platformUpdateDomain': '0', 'platformFaultDomain': '1'},
    ],
}

_TOP_LEVEL_KEYS = ('vms', 'throttle', 'first_call_delay_seconds', 'speed', 'clock_start', 'impact_command',
                   'default_linger_seconds', 'scenario', 'unknown_event_ids', 'offline_during_restart')
# How an approval naming an EventId the VM does not see is answered: reject
# (400, nothing approved) or accept (200, as Microsoft's mock server does).
# The documentation says neither; every client of this collection handles both.
UNKNOWN_EVENT_IDS_CHOICES = ('reject', 'accept')
_VM_KEYS = ('name', 'listen', 'group', 'vmScaleSetName', 'platformUpdateDomain', 'platformFaultDomain',
            'resourceId', 'own_events_only', 'location', 'vmId', 'vmSize', 'osType', 'resourceGroupName',
            'subscriptionId')


class ConfigError(ValueError):
    """A configuration value is wrong; the message names the field."""


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_listen(text, field='listen'):
    """``(host, port)`` of a ``HOST:PORT`` loopback address."""
    if not isinstance(text, str) or ':' not in text:
        raise ConfigError('%s must be "HOST:PORT" on loopback, such as "127.0.0.1:18101", got %r' % (field, text))
    host, dummy, port_text = text.rpartition(':')
    host = host.strip('[]')
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ConfigError('%s: host %r must be a numeric loopback address such as 127.0.0.1' % (field, host)) from None
    # The simulator answers anyone who can connect, so it must never be
    # reachable from the network.
    if not address.is_loopback:
        raise ConfigError('%s: %s is not a loopback address; use 127.0.0.0/8 (or ::1)' % (field, host))
    # Port 0 asks the kernel for a free port when the listener is opened
    # (tests do this so that parallel runs never collide).
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ConfigError('%s: port %r must be a number from 0 (any free port) to 65535' % (field, port_text))
    return host, int(port_text)


def is_any_port(address):
    """True for a ``(host, 0)`` address: the port is chosen when it is bound."""
    return address[1] == 0


def format_listen(address):
    """``HOST:PORT`` text of an ``(host, port)`` address, brackets around IPv6."""
    host, port = address
    return '%s:%d' % ('[%s]' % host if ':' in host else host, port)


def _string_field(vm, key, field, default):
    value = vm.get(key, default)
    if _is_number(value) and key in ('platformUpdateDomain', 'platformFaultDomain'):
        # IMDS sends the domains as strings; accept numbers from hand-written files.
        value = str(int(value))
    if not isinstance(value, str):
        raise ConfigError('%s.%s must be a string, got %r' % (field, key, value))
    return value


def validate_vm(vm, field='vm'):
    """A checked copy of one VM entry with every default filled in."""
    if not isinstance(vm, dict):
        raise ConfigError('%s must be an object with at least "name" and "listen", got %r' % (field, vm))
    unknown = sorted(set(vm) - set(_VM_KEYS))
    if unknown:
        raise ConfigError('%s: unknown field(s) %s; allowed: %s' % (field, ', '.join(unknown), ', '.join(_VM_KEYS)))
    name = vm.get('name')
    if not isinstance(name, str) or not name or name != name.strip() or '/' in name:
        raise ConfigError('%s.name must be a non-empty string without spaces at the ends or "/", got %r'
                          % (field, name))
    if 'listen' not in vm:
        raise ConfigError('%s.listen is required ("127.0.0.1:PORT")' % field)
    parse_listen(vm['listen'], field + '.listen')
    checked = {'name': name, 'listen': vm['listen']}
    checked['group'] = _string_field(vm, 'group', field, DEFAULT_GROUP) or DEFAULT_GROUP
    checked['vmScaleSetName'] = _string_field(vm, 'vmScaleSetName', field, '')
    for key in ('platformUpdateDomain', 'platformFaultDomain'):
        checked[key] = _string_field(vm, key, field, '0')
        if not checked[key].isdigit():
            raise ConfigError('%s.%s must be a non-negative number such as "0", got %r' % (field, key, checked[key]))
    own = vm.get('own_events_only', False)
    if not isinstance(own, bool):
        raise ConfigError('%s.own_events_only must be true or false, got %r' % (field, own))
    checked['own_events_only'] = own
    checked['subscriptionId'] = _string_field(vm, 'subscriptionId', field, DEFAULT_SUBSCRIPTION)
    checked['resourceGroupName'] = _string_field(vm, 'resourceGroupName', field, DEFAULT_RESOURCE_GROUP)
    checked['location'] = _string_field(vm, 'location', field, 'norwaywest')
    checked['vmSize'] = _string_field(vm, 'vmSize', field, 'Standard_D2s_v3')
    checked['osType'] = _string_field(vm, 'osType', field, 'Linux')
    # A stable vmId per name keeps documents identical across restarts.
    checked['vmId'] = _string_field(vm, 'vmId', field, str(uuid.uuid5(uuid.NAMESPACE_URL, 'imds-simulator/' + name)))
    checked['resourceId'] = _string_field(vm, 'resourceId', field, _default_resource_id(checked))
    return checked


def _default_resource_id(vm):
    prefix = '/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute' % (
        vm['subscriptionId'], vm['resourceGroupName'])
    if vm['vmScaleSetName']:
        # Scale-set instance names look like "myScaleSet_3"; the resource id
        # carries the instance number only.
        instance = vm['name'].rpartition('_')[2] or vm['name']
        return '%s/virtualMachineScaleSets/%s/virtualMachines/%s' % (prefix, vm['vmScaleSetName'], instance)
    return '%s/virtualMachines/%s' % (prefix, vm['name'])


def vm_identity(vm):
    """The ``compute`` object IMDS returns for ``vm`` (a checked VM entry)."""
    return {
        'azEnvironment': 'AzurePublicCloud',
        'location': vm['location'],
        'name': vm['name'],
        'osType': vm['osType'],
        'platformFaultDomain': vm['platformFaultDomain'],
        'platformUpdateDomain': vm['platformUpdateDomain'],
        'provider': 'Microsoft.Compute',
        'resourceGroupName': vm['resourceGroupName'],
        'resourceId': vm['resourceId'],
        'subscriptionId': vm['subscriptionId'],
        'tags': '',
        'vmId': vm['vmId'],
        'vmScaleSetName': vm['vmScaleSetName'],
        'vmSize': vm['vmSize'],
        'zone': '',
    }


def _check_non_negative(config, key, default):
    value = config.get(key, default)
    if not _is_number(value) or value < 0:
        raise ConfigError('%s must be a number >= 0, got %r' % (key, value))
    return value


def validate_impact_command(value, field='impact_command'):
    if value is None:
        return None
    if not isinstance(value, list) or not value or not all(isinstance(arg, str) and arg for arg in value):
        raise ConfigError('%s must be a non-empty list of non-empty strings (an argv, run without a shell), got %r'
                          % (field, value))
    return list(value)


def validate_throttle(value, field='throttle'):
    if not isinstance(value, dict):
        raise ConfigError('%s must be an object such as {"enabled": true, "per_second": 5}, got %r' % (field, value))
    unknown = sorted(set(value) - {'enabled', 'per_second'})
    if unknown:
        raise ConfigError('%s: unknown field(s) %s; allowed: enabled, per_second' % (field, ', '.join(unknown)))
    enabled = value.get('enabled', True)
    if not isinstance(enabled, bool):
        raise ConfigError('%s.enabled must be true or false, got %r' % (field, enabled))
    per_second = value.get('per_second', 5)
    if not isinstance(per_second, int) or isinstance(per_second, bool) or per_second < 1:
        raise ConfigError('%s.per_second must be a whole number >= 1, got %r' % (field, per_second))
    return {'enabled': enabled, 'per_second': per_second}


def validate_config(config):
    """A checked deep copy of ``config`` with defaults filled in."""
    if not isinstance(config, dict):
        raise ConfigError('the configuration must be a JSON object, got %s' % type(config).__name__)
    unknown = sorted(set(config) - set(_TOP_LEVEL_KEYS))
    if unknown:
        raise ConfigError('unknown top-level field(s) %s; allowed: %s'
                          % (', '.join(unknown), ', '.join(_TOP_LEVEL_KEYS)))
    vms = config.get('vms')
    if not isinstance(vms, list) or not vms:
        raise ConfigError('vms must be a non-empty list of VM objects ({"name": ..., "listen": "127.0.0.1:PORT"})')
    checked_vms = []
    names, listens = set(), set()
    for index, vm in enumerate(vms):
        field = 'vms[%d]' % index
        checked = validate_vm(vm, field)
        if checked['name'] in names:
            raise ConfigError('%s.name %r is used by another VM; names must be unique' % (field, checked['name']))
        address = parse_listen(checked['listen'])
        if address in listens and not is_any_port(address):
            raise ConfigError('%s.listen %r is used by another VM; each VM needs its own address'
                              % (field, checked['listen']))
        names.add(checked['name'])
        listens.add(address)
        checked_vms.append(checked)
    result = {'vms': checked_vms}
    result['throttle'] = validate_throttle(config.get('throttle', {}))
    result['first_call_delay_seconds'] = _check_non_negative(config, 'first_call_delay_seconds', 0)
    try:
        result['speed'] = check_speed(config.get('speed', 1.0))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    clock_start = config.get('clock_start')
    if clock_start is not None:
        try:
            parse_iso(clock_start, 'clock_start')
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    result['clock_start'] = clock_start
    result['impact_command'] = validate_impact_command(config.get('impact_command'))
    result['default_linger_seconds'] = _check_non_negative(config, 'default_linger_seconds', 600)
    result['unknown_event_ids'] = config.get('unknown_event_ids', 'reject')
    if result['unknown_event_ids'] not in UNKNOWN_EVENT_IDS_CHOICES:
        raise ConfigError('unknown_event_ids must be one of %s, got %r'
                          % (', '.join(UNKNOWN_EVENT_IDS_CHOICES), result['unknown_event_ids']))
    offline = config.get('offline_during_restart', False)
    if not isinstance(offline, bool):
        raise ConfigError('offline_during_restart must be true or false, got %r' % (offline,))
    result['offline_during_restart'] = offline
    scenario = config.get('scenario')
    if scenario is not None and not isinstance(scenario, dict):
        raise ConfigError('scenario must be an object ({"name": ...} or {"steps": [...]}), got %r' % (scenario,))
    result['scenario'] = copy.deepcopy(scenario)
    return result


def load_config_file(path):
    """The checked configuration stored in the JSON file at ``path``."""
    try:
        with open(path, encoding='utf-8') as handle:
            raw = json.load(handle)
    except OSError as exc:
        raise ConfigError('cannot read config file %s: %s' % (path, exc.strerror or exc)) from None
    except ValueError as exc:
        raise ConfigError('config file %s is not valid JSON: %s' % (path, exc)) from None
    try:
        return validate_config(raw)
    except ConfigError as exc:
        raise ConfigError('config file %s: %s' % (path, exc)) from None
