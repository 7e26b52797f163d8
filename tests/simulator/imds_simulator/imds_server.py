"""The IMDS side: one HTTP listener per VM address, answering like IMDS.

Checks run in the order that lets each error be tested on its own: injected
fault, throttle, first-call delay, then X-Forwarded-For, path, method,
api-version, Metadata header, and finally the document or the approval.
"""

import json
import logging
import time
from urllib.parse import parse_qs, urlsplit

from .clock import format_iso
from .config import format_listen, is_any_port, parse_listen, vm_identity
from .http_base import BodyError, JsonRequestHandler, open_server
from .world import ApprovalError

__all__ = ['ImdsListeners', 'SCHEDULED_EVENTS_VERSIONS', 'INSTANCE_VERSIONS']

SCHEDULED_EVENTS_VERSIONS = ('2017-03-01', '2017-08-01', '2017-11-01', '2019-01-01', '2019-04-01',
                             '2019-08-01', '2020-07-01')
INSTANCE_VERSIONS = ('2017-03-01', '2017-04-02', '2017-08-01', '2017-10-01', '2017-12-01', '2018-02-01',
                     '2018-04-02', '2018-10-01', '2019-02-01', '2019-03-11', '2019-04-30', '2019-06-01',
                     '2019-06-04', '2019-08-01', '2019-08-15', '2019-11-01', '2020-06-01', '2020-07-15',
                     '2020-09-01', '2020-10-01', '2020-12-01', '2021-01-01', '2021-02-01', '2021-03-01',
                     '2021-05-01', '2021-08-01', '2021-10-01', '2021-11-01', '2021-11-15', '2021-12-13',
                     '2022-02-01', '2022-03-01', '2022-05-01', '2022-07-01', '2022-08-01', '2022-09-01',
                     '2023-07-01', '2023-09-01', '2023-11-15')
# The Metadata header became mandatory for Scheduled Events with this version.
_HEADER_ENFORCED_SINCE = '2017-08-01'
_SCHEDULED_EVENTS_PATH = '/metadata/scheduledevents'
_INSTANCE_PATHS = ('/metadata/instance', '/metadata/instance/compute', '/metadata/instance/network')
_LOGGED_HEADERS = ('Metadata', 'X-Forwarded-For', 'Content-Type', 'Content-Length', 'Transfer-Encoding',
                   'User-Agent', 'Connection')
_LOG = logging.getLogger('imds_simulator.imds')


def _network_of(vm):
    # A plausible private address per VM, stable across restarts.
    host_number = 4 + sum(vm['name'].encode()) % 250
    return {'interface': [{
        'ipv4': {'ipAddress': [{'privateIpAddress': '10.0.0.%d' % host_number, 'publicIpAddress': ''}],
                 'subnet': [{'address': '10.0.0.0', 'prefix': '24'}]},
        'ipv6': {'ipAddress': []},
        'macAddress': '000D3A%06X' % (sum(vm['vmId'].encode()) * 7919 % 0xFFFFFF),
    }]}


class _Reply(Exception):
    """Stop handling and answer ``status`` with ``payload``."""

    def __init__(self, status, payload, headers=()):
        super().__init__(status)
        self.status = status
        self.payload = payload
        self.headers = headers


class ImdsRequestHandler(JsonRequestHandler):
    """Answers one VM's IMDS requests; the VM is found by the listening address."""

    def do_GET(self):
        self._handle('GET')

    def do_POST(self):
        self._handle('POST')

    def do_PUT(self):
        self._handle('PUT')

    def do_DELETE(self):
        self._handle('DELETE')

    def do_PATCH(self):
        self._handle('PATCH')

    def do_HEAD(self):
        self._handle('HEAD')

    def do_OPTIONS(self):
        self._handle('OPTIONS')

    @property
    def simulator(self):
        return self.server.owner

    def _handle(self, method):
        simulator = self.simulator
        world = simulator.world
        url = urlsplit(self.path)
        record = {'sim_time': format_iso(world.clock.now()), 'real_time': format_iso(time.time()),
                  'vm': None, 'method': method, 'path': url.path, 'query': url.query,
                  'headers': {name: self.headers[name] for name in _LOGGED_HEADERS if name in self.headers},
                  'status': None, 'fault': None}
        try:
            body = self.read_body()
        except BodyError as exc:
            self.close_connection = True
            record['status'] = 400
            simulator.request_log.append(record)
            self.send_json(400, {'error': 'Bad request. %s' % exc})
            return
        if method == 'POST':
            record['body'] = body.decode('utf-8', 'replace')
        vm = world.vm_at(self.server.bound_address)
        record['vm'] = vm
        if vm is None:
            # The VM was removed by a reset while this connection stayed open.
            self.close_connection = True
            record['status'] = 404
            simulator.request_log.append(record)
            self.send_json(404, {'error': 'Not found. No VM listens at this address any more.'})
            return
        try:
            status, payload, headers = self._answer(vm, method, url, body, record)
        except _Reply as reply:
            status, payload, headers = reply.status, reply.payload, reply.headers
        if status is None:
            record['status'] = 'reset'
            simulator.request_log.append(record)
            self.reset_connection()
            return
        record['status'] = status
        simulator.request_log.append(record)
        if isinstance(payload, bytes):
            self.send_bytes(status, payload, headers=headers)
        else:
            self.send_json(status, payload, headers=headers)

    def _answer(self, vm, method, url, body, record):
        """``(status, payload, headers)``; status None means reset the connection."""
        simulator = self.simulator
        world = simulator.world
        if world.offline(vm):
            # Restarting: the VM is down, so the connection fails outright.
            record['fault'] = 'offline'
            return None, None, ()
        fault = world.faults.take(vm, url.path, method)
        if fault is not None:
            record['fault'] = fault['kind']
            _LOG.info('%s %s %s: injected fault %s', vm, method, url.path, fault['kind'])
            if fault['kind'] == 'reset':
                return None, None, ()
            if fault['kind'] == 'status':
                headers = (('Retry-After', str(fault['retry_after'])),) if 'retry_after' in fault else ()
                return fault['status'], {'error': 'Simulated fault: HTTP %d' % fault['status']}, headers
            if fault['kind'] == 'redirect':
                return fault['status'], {'error': 'Simulated redirect'}, (('Location', fault['location']),)
            if fault['kind'] == 'malformed':
                return 200, self._truncated_body(vm, url.path), ()
            world.faults.hold(fault['delay_seconds'])
        if world.throttled(vm):
            return 429, {'error': 'Too many requests'}, ()
        wait = world.admit(vm, scheduled_events=url.path == _SCHEDULED_EVENTS_PATH)
        if wait > 0:
            time.sleep(wait)
        query = parse_qs(url.query, keep_blank_values=True)
        if 'X-Forwarded-For' in self.headers:
            raise _Reply(400, {'error': 'Bad request. Requests carrying the X-Forwarded-For header are rejected: '
                                        'call IMDS directly, not through a proxy.'})
        is_scheduled_events = url.path == _SCHEDULED_EVENTS_PATH
        is_instance = url.path in _INSTANCE_PATHS or (
            url.path.startswith('/metadata/instance/compute/') and url.path.count('/') == 4)
        if not (is_scheduled_events or is_instance):
            raise _Reply(404, {'error': 'Not found. Unknown IMDS path %s' % url.path})
        allowed = ('GET', 'POST') if is_scheduled_events else ('GET',)
        if method not in allowed:
            raise _Reply(405, {'error': 'Method not allowed. %s accepts %s' % (url.path, ' and '.join(allowed))},
                         (('Allow', ', '.join(allowed)),))
        versions = SCHEDULED_EVENTS_VERSIONS if is_scheduled_events else INSTANCE_VERSIONS
        api_version = self._api_version(query, versions)
        if (not is_scheduled_events or api_version >= _HEADER_ENFORCED_SINCE) and \
                self.headers.get('Metadata', '').strip().lower() != 'true':
            raise _Reply(400, {'error': 'Bad request. Required metadata header not specified'})
        if is_instance:
            return 200, self._instance(vm, url.path, query), ()
        if method == 'GET':
            return 200, world.document(vm, api_version), ()
        return self._approve(vm, api_version, body)

    @staticmethod
    def _api_version(query, versions):
        newest = list(reversed(versions[-3:]))
        values = query.get('api-version')
        if not values:
            raise _Reply(400, {'error': 'Bad request. api-version was not specified in the request. '
                                        'For more information refer to aka.ms/azureimds',
                               'newest-versions': newest})
        if values[-1] not in versions:
            raise _Reply(400, {'error': 'Bad request. api-version is invalid or was not specified in the request. '
                                        'For more information refer to aka.ms/azureimds',
                               'newest-versions': newest})
        return values[-1]

    def _instance(self, vm, path, query):
        spec = self.simulator.world.identity(vm)
        compute = vm_identity(spec)
        if path == '/metadata/instance':
            return {'compute': compute, 'network': _network_of(spec)}
        if path == '/metadata/instance/network':
            return _network_of(spec)
        if path == '/metadata/instance/compute':
            return compute
        leaf = path.rsplit('/', 1)[1]
        if leaf not in compute:
            raise _Reply(404, {'error': 'Not found. compute has no field %r' % leaf})
        if query.get('format', ['json'])[-1] != 'text':
            raise _Reply(400, {'error': 'Bad request. Leaf nodes only support text format; add format=text'})
        return str(compute[leaf]).encode('utf-8')

    def _truncated_body(self, vm, path):
        if path == _SCHEDULED_EVENTS_PATH:
            full = json.dumps(self.simulator.world.document(vm, SCHEDULED_EVENTS_VERSIONS[-1]))
        else:
            full = json.dumps(vm_identity(self.simulator.world.identity(vm)))
        # Half a JSON object is never valid JSON: a client must notice.
        return full[:max(1, len(full) // 2)].encode('utf-8')

    def _approve(self, vm, api_version, body):
        simulator = self.simulator
        approval = {'sim_time': format_iso(simulator.world.clock.now()), 'real_time': format_iso(time.time()),
                    'vm': vm, 'api_version': api_version, 'event_ids': [], 'status': None, 'error': None}
        try:
            event_ids = _start_requests(body)
            approval['event_ids'] = event_ids
            simulator.world.approve(vm, api_version, event_ids)
        except ApprovalError as exc:
            approval.update(status=400, error=str(exc))
            simulator.approval_log.append(approval)
            _LOG.info('%s approval rejected: %s', vm, exc)
            return 400, {'error': str(exc)}, ()
        approval['status'] = 200
        simulator.approval_log.append(approval)
        return 200, None, ()


def _start_requests(body):
    """The EventIds of an approval body; ApprovalError says what is wrong."""
    shape = 'the body must be {"StartRequests": [{"EventId": "<id>"}, ...]}'
    try:
        payload = json.loads(body.decode('utf-8'))
    except (UnicodeDecodeError, ValueError):
        raise ApprovalError('Bad request. The body is not valid JSON; %s' % shape) from None
    if not isinstance(payload, dict) or not isinstance(payload.get('StartRequests'), list):
        raise ApprovalError('Bad request. StartRequests is missing or not a list; %s' % shape)
    if not payload['StartRequests']:
        raise ApprovalError('Bad request. StartRequests is empty; list at least one EventId')
    event_ids = []
    for index, item in enumerate(payload['StartRequests']):
        if not isinstance(item, dict) or not isinstance(item.get('EventId'), str) or not item['EventId']:
            raise ApprovalError('Bad request. StartRequests[%d] has no EventId string; %s' % (index, shape))
        event_ids.append(item['EventId'])
    return event_ids


class ImdsListeners:
    """The open VM listeners, keyed by address so a reset can keep or swap them."""

    def __init__(self, simulator):
        self._simulator = simulator
        self._servers = {}

    def open_missing(self, addresses):
        """Bind every address not yet served; on failure close the new ones and raise OSError."""
        opened = []
        try:
            for address in sorted(addresses):
                if address not in self._servers:
                    try:
                        server = open_server(address, ImdsRequestHandler, self._simulator)
                    except OSError as exc:
                        message = 'cannot listen on %s:%d for a VM: %s (is another simulator or program using it?)'
                        raise OSError(exc.errno, message % (address[0], address[1], exc.strerror or exc)) from None
                    opened.append(address)
                    self._servers[address] = server
        except OSError:
            for address in opened:
                self._servers.pop(address).close_all()
            raise

    def bind_any_ports(self, vm_specs):
        """Open a listener for every spec whose port is 0 and write the port chosen into its ``listen``.

        Done before the world sees the specs, so every VM is known by the
        address clients will use. On failure the new listeners are closed
        again and OSError is raised.
        """
        opened = []
        try:
            for spec in vm_specs:
                address = parse_listen(spec['listen'])
                if not is_any_port(address):
                    continue
                server = open_server(address, ImdsRequestHandler, self._simulator)
                bound = server.server_address[:2]
                self._servers[bound] = server
                opened.append(bound)
                spec['listen'] = format_listen(bound)
        except OSError as exc:
            for address in opened:
                self._servers.pop(address).close_all()
            raise OSError(exc.errno, 'cannot open a listener on a free port for a VM: %s' % (exc.strerror or exc)) \
                from None

    def close_except(self, addresses):
        for address in list(self._servers):
            if address not in addresses:
                self._servers.pop(address).close_all()

    def close_all(self):
        self.close_except(set())

    def addresses(self):
        return set(self._servers)
