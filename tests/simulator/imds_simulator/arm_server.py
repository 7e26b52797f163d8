"""The ARM facade: Resource Graph, the acknowledge API and Event Grid over the same world.

What a controller sees of Scheduled Events from outside the VMs (see the last
section of the project's IMDS facts and docs/simulator.md):

- ``POST /providers/Microsoft.ResourceGraph/resources?api-version=2022-10-01``
  answers the ``maintenanceresources`` query shapes of ``arm_rows`` with
  paging (``$top``, ``$skipToken``) and the per-user quota headers, or 429
  with ``Retry-After`` once the quota is spent;
- ``POST .../providers/Microsoft.Maintenance/scheduledevents/{EventId}/acknowledge
  ?api-version=2023-10-01-preview`` approves the event exactly as an IMDS
  POST from one of its VMs would;
- optional Event Grid deliveries of every row change to a webhook.

Every request needs ``Authorization: Bearer <token>`` with a token of
``settings['tokens']`` (401 otherwise). Tokens without the
ScheduledEventContributor role see no rows (Resource Graph shows only what
the caller may read) and get 403 on acknowledge. The facade's own settings
and logs live under ``/_simulator/arm``, a path ARM never has.
"""

import base64
import collections
import copy
import json
import logging
import math
import re
import threading
import time
import urllib.parse

from .arm_rows import QueryError, filter_rows, owner_id, parse_query, rows_of
from .clock import format_iso
from .config import ConfigError, format_listen, parse_listen
from .eventgrid import SCHEMAS, Deliverer
from .http_base import BodyError, JsonRequestHandler, open_server
from .logs import SequencedLog
from .world import ApprovalError

__all__ = ['ArmFacade', 'DEFAULT_ARM_SETTINGS', 'validate_arm_settings', 'CONTRIBUTOR_ROLE',
           'RESOURCE_GRAPH_PATH', 'ACK_API_VERSION', 'ACK_LIST_API_VERSION']

CONTRIBUTOR_ROLE = 'ScheduledEventContributor'
RESOURCE_GRAPH_PATH = '/providers/Microsoft.ResourceGraph/resources'
RESOURCE_GRAPH_API_VERSIONS = ('2021-03-01', '2022-10-01', '2024-04-01')
ACK_API_VERSION = '2023-10-01-preview'
_SETTINGS_PATH = '/_simulator/arm'
_MAX_TOP = 1000
_ACK_PATH = re.compile(
    r'^(/subscriptions/[^/]+/resourcegroups/[^/]+/providers/microsoft\.compute/'
    r'(?:virtualmachines|virtualmachinescalesets)/[^/]+)/providers/microsoft\.maintenance/scheduledevents/'
    r'([^/]+)/acknowledge$', re.IGNORECASE)
# The list form: several events of one resource in one POST, {"value": [EventId, ...]}.
_ACK_LIST_PATH = re.compile(
    r'^(/subscriptions/[^/]+/resourcegroups/[^/]+/providers/microsoft\.compute/'
    r'(?:virtualmachines|virtualmachinescalesets)/[^/]+)/providers/microsoft\.maintenance/scheduledevents$',
    re.IGNORECASE)
ACK_LIST_API_VERSION = '2025-10-01-preview'
_LOG = logging.getLogger('imds_simulator.arm')

DEFAULT_ARM_SETTINGS = {
    'tenant_id': '0b5d7a8e-6c5e-4b8e-9a55-3f2c1d0e9a11',
    # token -> roles; a token without the contributor role is known but not allowed.
    'tokens': {'simulator-token': [CONTRIBUTOR_ROLE]},
    # Simulated seconds a Completed or Canceled event stays in Resource Graph.
    'finished_retention_seconds': 3600,
    'page_size': _MAX_TOP,
    # Resource Graph's per-user quota: this many requests per window of real seconds; null turns it off.
    'quota': {'requests': 15, 'window_seconds': 5},
    # Answer the next N Resource Graph requests with 429 and this Retry-After, whatever the quota.
    'throttle_next': 0,
    'retry_after_seconds': 1,
    # {"webhook": URL, "schema": EventGridSchema|CloudEventSchemaV1_0, "headers": {}, ...} or null.
    'eventgrid': None,
}
_EVENTGRID_DEFAULTS = {'schema': 'EventGridSchema', 'headers': {}, 'max_attempts': 3, 'poll_seconds': 0.2}


def _number(value, field, minimum, integer=False):
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or value < minimum:
        raise ConfigError('%s must be a %s >= %s, got %r' % (field, 'whole number' if integer else 'number',
                                                             minimum, value))
    return value


def _checked_eventgrid(value):
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get('webhook'), str) \
            or not value['webhook'].startswith(('http://', 'https://')):
        raise ConfigError('eventgrid must be null or an object with "webhook": "http://HOST:PORT/PATH", got %r'
                          % (value,))
    unknown = sorted(set(value) - set(_EVENTGRID_DEFAULTS) - {'webhook'})
    if unknown:
        raise ConfigError('eventgrid: unknown field(s) %s; allowed: webhook, %s'
                          % (', '.join(unknown), ', '.join(_EVENTGRID_DEFAULTS)))
    checked = dict(_EVENTGRID_DEFAULTS, **value)
    if checked['schema'] not in SCHEMAS:
        raise ConfigError('eventgrid.schema must be one of %s, got %r' % (', '.join(SCHEMAS), checked['schema']))
    if not isinstance(checked['headers'], dict) or not all(
            isinstance(key, str) and isinstance(item, str) for key, item in checked['headers'].items()):
        raise ConfigError('eventgrid.headers must map header names to strings (delivery attributes), got %r'
                          % (checked['headers'],))
    _number(checked['max_attempts'], 'eventgrid.max_attempts', 1, integer=True)
    _number(checked['poll_seconds'], 'eventgrid.poll_seconds', 0.01)
    return checked


def validate_arm_settings(settings, base=None):
    """A checked copy of ``base`` (default: the defaults) updated with ``settings``; ConfigError names the field."""
    if not isinstance(settings, dict):
        raise ConfigError('ARM settings must be a JSON object, got %s' % type(settings).__name__)
    unknown = sorted(set(settings) - set(DEFAULT_ARM_SETTINGS))
    if unknown:
        raise ConfigError('ARM settings: unknown field(s) %s; allowed: %s'
                          % (', '.join(unknown), ', '.join(DEFAULT_ARM_SETTINGS)))
    checked = copy.deepcopy(base if base is not None else DEFAULT_ARM_SETTINGS)
    checked.update(copy.deepcopy(settings))
    tokens = checked['tokens']
    if not isinstance(tokens, dict) or not all(
            isinstance(token, str) and token and isinstance(roles, list) and all(isinstance(r, str) for r in roles)
            for token, roles in tokens.items()):
        raise ConfigError('tokens must map bearer tokens to lists of role names, such as '
                          '{"simulator-token": ["%s"]}, got %r' % (CONTRIBUTOR_ROLE, tokens))
    if not isinstance(checked['tenant_id'], str):
        raise ConfigError('tenant_id must be a string, got %r' % (checked['tenant_id'],))
    _number(checked['finished_retention_seconds'], 'finished_retention_seconds', 0)
    _number(checked['page_size'], 'page_size', 1, integer=True)
    if checked['page_size'] > _MAX_TOP:
        raise ConfigError('page_size must be at most %d, as in Resource Graph, got %r' % (_MAX_TOP, checked['page_size']))
    quota = checked['quota']
    if quota is not None:
        if not isinstance(quota, dict) or set(quota) != {'requests', 'window_seconds'}:
            raise ConfigError('quota must be null or {"requests": N, "window_seconds": S}, got %r' % (quota,))
        _number(quota['requests'], 'quota.requests', 1, integer=True)
        _number(quota['window_seconds'], 'quota.window_seconds', 0.01)
    _number(checked['throttle_next'], 'throttle_next', 0, integer=True)
    _number(checked['retry_after_seconds'], 'retry_after_seconds', 0, integer=True)
    checked['eventgrid'] = _checked_eventgrid(checked['eventgrid'])
    return checked


class _Reply(Exception):
    def __init__(self, status, code, message, headers=()):
        super().__init__(message)
        self.status = status
        self.payload = {'error': {'code': code, 'message': message}}
        self.headers = list(headers)


def _skip_token(offset):
    return base64.urlsafe_b64encode(json.dumps({'offset': offset}).encode('ascii')).decode('ascii')


def _offset_of(token):
    try:
        offset = json.loads(base64.urlsafe_b64decode(token.encode('ascii')).decode('ascii'))['offset']
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeError):
        raise _Reply(400, 'BadRequest', 'options.$skipToken %r is not a token this service gave; send back the '
                     '$skipToken of the previous page unchanged' % (token,)) from None
    if not isinstance(offset, int) or offset < 0:
        raise _Reply(400, 'BadRequest', 'options.$skipToken %r is not a token this service gave' % (token,))
    return offset


def _format_duration(seconds):
    seconds = int(math.ceil(seconds))
    return '%02d:%02d:%02d' % (seconds // 3600, seconds // 60 % 60, seconds % 60)


class ArmFacade:
    """The ARM listener of one simulator; ``start()``, ``stop()``, ``address`` once started."""

    def __init__(self, simulator, listen, settings=None):
        self.simulator = simulator
        self.address = parse_listen(listen, '--arm')
        self.settings = validate_arm_settings(settings or {})
        self.lock = threading.Lock()
        self.acknowledge_log = SequencedLog()
        self.eventgrid_log = SequencedLog()
        self.query_count = 0
        self._quota_windows = collections.defaultdict(collections.deque)
        self._server = None
        self._deliverer = None

    @property
    def url(self):
        return 'http://' + format_listen(self.address)

    def start(self):
        self._server = open_server(self.address, ArmRequestHandler, self)
        self.address = self._server.server_address[:2]
        self._restart_deliverer()
        _LOG.info('ARM facade at %s', self.url)

    def stop(self):
        if self._deliverer is not None:
            self._deliverer.stop()
            self._deliverer = None
        if self._server is not None:
            self._server.close_all()
            self._server = None

    def _restart_deliverer(self):
        if self._deliverer is not None:
            self._deliverer.stop()
            self._deliverer = None
        if self.settings['eventgrid'] is not None:
            self._deliverer = Deliverer(self.settings['eventgrid'], self.rows, self.simulator.world.clock.now,
                                        self.eventgrid_log)
            self._deliverer.start()

    def update_settings(self, request):
        with self.lock:
            self.settings = validate_arm_settings(request, self.settings)
            self._quota_windows.clear()
        self._restart_deliverer()
        return self.describe()

    def describe(self):
        with self.lock:
            settings = copy.deepcopy(self.settings)
        return {'settings': settings, 'query_count': self.query_count,
                'eventgrid_validated': bool(self._deliverer and self._deliverer.validated)}

    # -- the world as rows ------------------------------------------------
    def rows(self):
        world = self.simulator.world
        with world.lock:
            world.refresh()
            specs = {name: vm.spec for name, vm in world.vms.items()}
            events = sorted(world.events.values(), key=lambda event: event.sequence)
            return rows_of(events, specs, world.clock.now(), self.settings['finished_retention_seconds'],
                           self.settings['tenant_id'])

    # -- auth and quota ---------------------------------------------------
    def roles_of(self, authorization):
        """The roles of the bearer token in ``authorization``; _Reply 401 if there is no known token."""
        scheme, dummy, token = (authorization or '').partition(' ')
        if scheme.lower() != 'bearer' or not token.strip():
            raise _Reply(401, 'AuthenticationFailed', 'Authentication failed. The Authorization header is missing '
                         'or is not "Bearer <token>".', [('WWW-Authenticate', 'Bearer')])
        roles = self.settings['tokens'].get(token.strip())
        if roles is None:
            raise _Reply(401, 'InvalidAuthenticationToken', 'The access token is invalid.',
                         [('WWW-Authenticate', 'Bearer error="invalid_token"')])
        return token.strip(), roles

    def charge_quota(self, token):
        """Headers for this Resource Graph request, or _Reply 429 when the caller's quota is spent."""
        with self.lock:
            if self.settings['throttle_next'] > 0:
                self.settings['throttle_next'] -= 1
                retry_after = self.settings['retry_after_seconds']
                raise _Reply(429, 'RateLimiting', 'Please provide below info when asking for support: ... '
                             'Rate limit exceeded (forced by the simulator).',
                             [('Retry-After', str(retry_after)), ('x-ms-user-quota-remaining', '0'),
                              ('x-ms-user-quota-resets-after', _format_duration(retry_after))])
            quota = self.settings['quota']
            if quota is None:
                return []
            window = self._quota_windows[token]
            now = time.monotonic()
            while window and window[0] <= now - quota['window_seconds']:
                window.popleft()
            if len(window) >= quota['requests']:
                wait = window[0] + quota['window_seconds'] - now
                raise _Reply(429, 'RateLimiting', 'Rate limit of %d requests per %s seconds exceeded; retry after '
                             'the time in Retry-After' % (quota['requests'], quota['window_seconds']),
                             [('Retry-After', str(max(1, int(math.ceil(wait))))),
                              ('x-ms-user-quota-remaining', '0'),
                              ('x-ms-user-quota-resets-after', _format_duration(wait))])
            window.append(now)
            resets_after = window[0] + quota['window_seconds'] - now
            return [('x-ms-user-quota-remaining', str(quota['requests'] - len(window))),
                    ('x-ms-user-quota-resets-after', _format_duration(resets_after))]

    # -- the two ARM operations ------------------------------------------
    def query(self, body, roles, headers):
        if not isinstance(body, dict):
            raise _Reply(400, 'BadRequest', 'the body must be a JSON object {"subscriptions": [...], "query": "..."}')
        subscriptions = body.get('subscriptions') or []
        if not isinstance(subscriptions, list) or not all(isinstance(item, str) for item in subscriptions):
            raise _Reply(400, 'BadRequest', 'subscriptions must be a list of subscription ids, got %r'
                         % (subscriptions,))
        options = body.get('options') or {}
        if not isinstance(options, dict):
            raise _Reply(400, 'BadRequest', 'options must be an object, got %r' % (options,))
        if options.get('resultFormat', 'objectArray') != 'objectArray':
            raise _Reply(400, 'BadRequest', 'the simulator answers options.resultFormat "objectArray" only')
        top = options.get('$top', self.settings['page_size'])
        if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= _MAX_TOP:
            raise _Reply(400, 'BadRequest', 'options.$top must be a whole number from 1 to %d, got %r'
                         % (_MAX_TOP, top))
        top = min(top, self.settings['page_size'])
        offset = _offset_of(options['$skipToken']) if options.get('$skipToken') else 0
        try:
            parsed = parse_query(body.get('query'))
        except QueryError as exc:
            raise _Reply(400, 'BadRequest', 'Query is invalid: %s' % exc) from None
        # Resource Graph shows only what the caller may read.
        rows = filter_rows(self.rows(), parsed, subscriptions) if CONTRIBUTOR_ROLE in roles else []
        page = rows[offset:offset + top]
        answer = {'totalRecords': len(rows), 'count': len(page), 'data': page, 'facets': [],
                  'resultTruncated': 'false'}
        if offset + top < len(rows):
            answer['$skipToken'] = _skip_token(offset + top)
        with self.lock:
            self.query_count += 1
        return answer, headers

    @staticmethod
    def _check_role(roles, scope):
        if CONTRIBUTOR_ROLE not in roles:
            raise _Reply(403, 'AuthorizationFailed', 'The client does not have authorization to perform action '
                         "'Microsoft.Maintenance/scheduledevents/acknowledge/action' over scope '%s'; assign it the "
                         '%s role' % (scope, CONTRIBUTOR_ROLE))

    def _check_acknowledgeable(self, owner, event_id):
        row_id = '%s/providers/Microsoft.Maintenance/scheduledevents/%s' % (owner, event_id)
        rows = [row for row in self.rows() if row['id'].lower() == row_id.lower()]
        if not rows:
            raise _Reply(404, 'ResourceNotFound', "The scheduled event '%s' of resource '%s' was not found"
                         % (event_id, owner))
        status = rows[0]['properties']['EventStatus']
        if status not in ('Scheduled', 'Started'):
            raise _Reply(409, 'Conflict', 'The scheduled event %s is %s; there is nothing left to acknowledge'
                         % (event_id, status))
        return row_id

    def _log_entry(self, row_id, event_id, form):
        return {'sim_time': format_iso(self.simulator.world.clock.now()), 'real_time': format_iso(time.time()),
                'row_id': row_id, 'event_id': event_id, 'form': form, 'status': None, 'error': None}

    def acknowledge(self, path, roles):
        match = _ACK_PATH.match(path)
        owner, event_id = match.group(1), match.group(2)
        self._check_role(roles, path.rsplit('/acknowledge', 1)[0])
        entry = self._log_entry('%s/providers/Microsoft.Maintenance/scheduledevents/%s' % (owner, event_id),
                                event_id, 'single')
        try:
            self._check_acknowledgeable(owner, event_id)
            self._approve_as_vm(owner, event_id)
        except _Reply as reply:
            entry.update(status=reply.status, error=reply.payload['error']['message'])
            self.acknowledge_log.append(entry)
            raise
        entry['status'] = 200
        self.acknowledge_log.append(entry)
        return {'value': 'Acknowledged'}

    def acknowledge_list(self, path, roles, body):
        """The list form: every id is checked first; one unknown or finished event fails the whole request."""
        owner = _ACK_LIST_PATH.match(path).group(1)
        self._check_role(roles, path)
        event_ids = body.get('value') if isinstance(body, dict) else None
        if not isinstance(event_ids, list) or not event_ids or not all(isinstance(item, str) for item in event_ids):
            raise _Reply(400, 'InvalidRequestContent',
                         'the body must be {"value": [EventId, ...]} with at least one id')
        entries = [self._log_entry('%s/providers/Microsoft.Maintenance/scheduledevents/%s' % (owner, event_id),
                                   event_id, 'list') for event_id in event_ids]
        try:
            for event_id in event_ids:
                self._check_acknowledgeable(owner, event_id)
            for event_id in event_ids:
                self._approve_as_vm(owner, event_id)
        except _Reply as reply:
            for entry in entries:
                entry.update(status=reply.status, error=reply.payload['error']['message'])
                self.acknowledge_log.append(entry)
            raise
        for entry in entries:
            entry['status'] = 200
            self.acknowledge_log.append(entry)
        return {'value': 'Acknowledged'}

    def _approve_as_vm(self, owner, event_id):
        """Approve as the first VM of the event that ``owner`` owns, through the IMDS path of the world."""
        world = self.simulator.world
        with world.lock:
            event = world.events[event_id.lower()]
            vm_name = next(name for name in event.resources
                           if name in world.vms and owner_id(world.vms[name].spec).lower() == owner.lower())
            approval = {'sim_time': format_iso(world.clock.now()), 'real_time': format_iso(time.time()),
                        'vm': vm_name, 'api_version': ACK_API_VERSION, 'event_ids': [event.event_id],
                        'status': 200, 'error': None, 'via': 'arm'}
            try:
                world.approve(vm_name, '2020-07-01', [event.event_id])
            except ApprovalError as exc:
                raise _Reply(409, 'Conflict', str(exc)) from None
            self.simulator.approval_log.append(approval)


class ArmRequestHandler(JsonRequestHandler):
    """Routes ARM requests to the facade (``self.server.owner``)."""

    def do_GET(self):
        self._handle('GET')

    def do_POST(self):
        self._handle('POST')

    def do_PUT(self):
        self._handle('PUT')

    def _handle(self, method):
        facade = self.server.owner
        parsed = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(parsed.query)
        try:
            try:
                raw = self.read_body()
            except BodyError as exc:
                self.close_connection = True
                raise _Reply(400, 'BadRequest', str(exc)) from None
            status, payload, headers = self._route(facade, method, parsed.path.rstrip('/'), query, raw)
        except _Reply as reply:
            status, payload, headers = reply.status, reply.payload, reply.headers
        self.send_json(status, payload, headers=[('x-ms-request-id', str(facade.query_count))] + list(headers))

    @staticmethod
    def _json(raw):
        try:
            return json.loads(raw.decode('utf-8')) if raw else None
        except (ValueError, UnicodeError):
            raise _Reply(400, 'InvalidRequestContent', 'the request body is not JSON') from None

    def _route(self, facade, method, path, query, raw):
        if path == _SETTINGS_PATH:
            if method == 'PUT':
                try:
                    return 200, facade.update_settings(self._json(raw)), []
                except ConfigError as exc:
                    raise _Reply(400, 'BadRequest', str(exc)) from None
            return 200, facade.describe(), []
        if path == _SETTINGS_PATH + '/log':
            since = int((query.get('since') or ['0'])[-1])
            return 200, {'acknowledgements': facade.acknowledge_log.since(since),
                         'eventgrid': facade.eventgrid_log.since(since)}, []
        is_graph = path.lower() == RESOURCE_GRAPH_PATH.lower()
        is_ack = bool(_ACK_PATH.match(path))
        is_ack_list = bool(_ACK_LIST_PATH.match(path))
        if not (is_graph or is_ack or is_ack_list):
            raise _Reply(404, 'NotFound', 'the ARM facade answers %s, .../providers/Microsoft.Maintenance/'
                         'scheduledevents/{EventId}/acknowledge and .../providers/Microsoft.Maintenance/'
                         'scheduledevents (the list form) only, not %s' % (RESOURCE_GRAPH_PATH, path))
        if method != 'POST':
            raise _Reply(405, 'MethodNotAllowed', '%s takes POST' % path)
        api_version = (query.get('api-version') or [None])[-1]
        wanted = RESOURCE_GRAPH_API_VERSIONS if is_graph else (
            (ACK_LIST_API_VERSION,) if is_ack_list else (ACK_API_VERSION,))
        if api_version not in wanted:
            raise _Reply(400, 'InvalidApiVersionParameter', "The api-version '%s' is invalid. The supported "
                         "versions are '%s'." % (api_version, ','.join(wanted)))
        token, roles = facade.roles_of(self.headers.get('Authorization'))
        if is_ack:
            return 200, facade.acknowledge(path, roles), []
        if is_ack_list:
            return 200, facade.acknowledge_list(path, roles, self._json(raw)), []
        headers = facade.charge_quota(token)
        answer, headers = facade.query(self._json(raw), roles, headers)
        return 200, answer, headers
