"""The control API: JSON over HTTP for tests and people rehearsing maintenance.

Every error answers a JSON ``{"error": "..."}`` that says what to change.
docs/simulator.md is the reference for each route.
"""

import json
import logging
from urllib.parse import parse_qs, unquote, urlsplit

from .clock import check_speed, parse_iso
from .config import ConfigError
from .events import EventError
from .faults import FaultError, check_fault
from .http_base import BodyError, JsonRequestHandler
from .scenarios import BUILTIN_SCENARIOS, ScenarioError

__all__ = ['ControlRequestHandler']

_LOG = logging.getLogger('imds_simulator.control')


class _Failure(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def _since(query):
    text = query.get('since', ['0'])[-1]
    if not text.isdigit():
        raise _Failure(400, 'since must be a sequence number (0 for everything), got %r' % text)
    return int(text)


class ControlRequestHandler(JsonRequestHandler):
    """Routes control requests to the Simulator in ``server.owner``."""

    def do_GET(self):
        self._handle('GET')

    def do_POST(self):
        self._handle('POST')

    def do_DELETE(self):
        self._handle('DELETE')

    def do_PUT(self):
        self._handle('PUT')

    def _handle(self, method):
        url = urlsplit(self.path)
        parts = [unquote(part) for part in url.path.strip('/').split('/') if part]
        try:
            body = self._json_body()
            status, payload = self._route(method, parts, parse_qs(url.query), body)
        except _Failure as failure:
            status, payload = failure.status, {'error': str(failure)}
        except EventError as exc:
            status, payload = exc.status, {'error': str(exc)}
        except (ConfigError, FaultError, ScenarioError, ValueError) as exc:
            status, payload = 400, {'error': str(exc)}
        except OSError as exc:
            status, payload = 409, {'error': exc.strerror or str(exc)}
        if status >= 400:
            _LOG.info('control %s %s -> %d %s', method, url.path, status, payload.get('error'))
        self.send_json(status, payload)

    def _json_body(self):
        try:
            raw = self.read_body()
        except BodyError as exc:
            self.close_connection = True
            raise _Failure(400, str(exc)) from None
        if not raw.strip():
            return None
        try:
            return json.loads(raw.decode('utf-8'))
        except (UnicodeDecodeError, ValueError) as exc:
            raise _Failure(400, 'the request body is not valid JSON: %s' % exc) from None

    @staticmethod
    def _need_object(body, example):
        if not isinstance(body, dict):
            raise _Failure(400, 'this route needs a JSON object body such as %s' % example)
        return body

    def _route(self, method, parts, query, body):
        simulator = self.server.owner
        world = simulator.world
        head = parts[0] if parts else ''
        if method == 'GET' and parts in (['health'], []):
            return 200, {'ok': True}
        if method == 'GET' and parts == ['state']:
            return 200, world.state()
        if parts == ['reset'] and method == 'POST':
            return 200, simulator.reset(body)
        if head == 'vms':
            return self._vms(method, parts, body)
        if head == 'events':
            return self._events(method, parts, body)
        if parts == ['clock']:
            if method == 'POST':
                self._clock(self._need_object(body, '{"advance_seconds": 60}'))
            elif method != 'GET':
                raise _Failure(405, 'use GET or POST on /clock')
            world.refresh()
            return 200, world.clock.describe()
        if parts == ['faults']:
            if method == 'GET':
                return 200, {'faults': world.faults.pending()}
            if method == 'DELETE':
                world.faults.clear()
                return 200, {'faults': []}
            if method == 'POST':
                requests = body if isinstance(body, list) else [self._need_object(
                    body, '{"kind": "status", "status": 503, "count": 1}')]
                rules = [check_fault(request, world.vms) for request in requests]
                return 201, {'faults': [world.faults.add(rule) for rule in rules]}
        if parts == ['throttle'] and method in ('GET', 'POST'):
            if method == 'GET':
                return 200, dict(world.throttle)
            return 200, world.set_throttle(self._need_object(body, '{"enabled": true, "per_second": 5}'))
        if parts == ['enablement'] and method in ('GET', 'POST'):
            if method == 'POST':
                request = self._need_object(body, '{"first_call_delay_seconds": 2}')
                if 'first_call_delay_seconds' not in request:
                    raise _Failure(400, 'give first_call_delay_seconds (real seconds)')
                world.set_first_call_delay(request['first_call_delay_seconds'])
            return 200, {'first_call_delay_seconds': world.first_call_delay_seconds}
        if parts == ['scenario']:
            if method == 'POST':
                return 201, world.start_scenario(self._need_object(body, '{"name": "westno"}'))
            if method == 'GET':
                world.refresh()
                return 200, {'scenario': None if world.scenario is None else world.scenario.describe(),
                             'builtin': sorted(BUILTIN_SCENARIOS)}
        if parts == ['log'] and method == 'GET':
            entries = simulator.request_log.since(_since(query))
            vm = query.get('vm', [None])[-1]
            if vm is not None:
                entries = [entry for entry in entries if entry['vm'] == vm]
            return 200, {'entries': entries}
        if parts == ['approvals'] and method == 'GET':
            return 200, {'approvals': simulator.approval_log.since(_since(query))}
        if parts == ['impacts'] and method == 'GET':
            world.refresh()
            return 200, {'impacts': simulator.impact_log.since(_since(query))}
        known = {'health', 'state', 'reset', 'clock', 'faults', 'throttle', 'enablement', 'scenario', 'log',
                 'approvals', 'impacts'}
        if head in known and len(parts) == 1:
            raise _Failure(405, '%s is not allowed on /%s; see docs/simulator.md' % (method, head))
        raise _Failure(404, 'no control route %s /%s; see docs/simulator.md' % (method, '/'.join(parts)))

    def _clock(self, request):
        world = self.server.owner.world
        unknown = sorted(set(request) - {'advance_seconds', 'speed', 'set'})
        if unknown or not request:
            raise _Failure(400, 'POST /clock takes advance_seconds, speed and/or set (ISO 8601 UTC)%s'
                           % ('; unknown: ' + ', '.join(unknown) if unknown else ''))
        with world.lock:
            # Check everything before changing anything.
            if 'speed' in request:
                check_speed(request['speed'])
            if 'set' in request:
                parse_iso(request['set'], 'set')
            if 'set' in request:
                world.set_clock(request['set'])
            if 'speed' in request:
                world.set_speed(request['speed'])
            if 'advance_seconds' in request:
                world.advance_clock(request['advance_seconds'])

    def _vms(self, method, parts, body):
        simulator = self.server.owner
        world = simulator.world
        if parts == ['vms']:
            if method == 'GET':
                return 200, {'vms': world.state()['vms']}
            if method == 'POST':
                return 201, simulator.add_vm(self._need_object(body, '{"name": "vm2", "listen": "127.0.0.1:18103"}'))
            raise _Failure(405, 'use GET or POST on /vms')
        if len(parts) == 3 and parts[2] == 'disable':
            if method != 'POST':
                raise _Failure(405, 'use POST on /vms/<name>/disable')
            return 200, world.disable_vm(parts[1])
        raise _Failure(404, 'no control route %s /%s' % (method, '/'.join(parts)))

    def _events(self, method, parts, body):
        world = self.server.owner.world
        if parts == ['events']:
            if method == 'GET':
                return 200, {'events': world.state()['events']}
            if method == 'POST':
                event_id = world.create_event(self._need_object(body, '{"event_type": "Freeze", "resources": ["vm"]}'))
                return 201, {'event_id': event_id, 'event': world.event(event_id).describe()}
            raise _Failure(405, 'use GET or POST on /events')
        if len(parts) == 2:
            if method == 'DELETE':
                return 200, world.cancel_event(parts[1])
            if method == 'GET':
                world.refresh()
                return 200, world.event(parts[1]).describe()
            raise _Failure(405, 'use GET or DELETE on /events/<id>')
        if len(parts) == 3 and parts[2] == 'change':
            if method != 'POST':
                raise _Failure(405, 'use POST on /events/<id>/change')
            return 200, world.change_event(parts[1], self._need_object(
                body, '{"event_type": "Freeze", "not_before_seconds": 300, "resources": ["vm"]}'))
        if len(parts) == 3 and parts[2] in ('start', 'tenants-approved'):
            if method != 'POST':
                raise _Failure(405, 'use POST on /events/<id>/%s' % parts[2])
            if parts[2] == 'start':
                return 200, world.start_event(parts[1])
            return 200, world.mark_tenants_approved(parts[1])
        raise _Failure(404, 'no control route %s /%s' % (method, '/'.join(parts)))
