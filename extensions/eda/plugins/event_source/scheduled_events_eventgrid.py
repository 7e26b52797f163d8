# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Event-Driven Ansible source: Azure Scheduled Events pushed by Event Grid to a webhook."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import asyncio
import hmac
import json
import logging
import os
import ssl
import sys
import time

DOCUMENTATION = r'''
---
short_description: Receive Azure Scheduled Events from Event Grid webhook deliveries
description:
  - Listens for Event Grid deliveries of
    C(Microsoft.ResourceNotifications.MaintenanceResources.ScheduledEventEmitted) (the Scheduled Events that VMs,
    availability sets and scale sets publish outside the VM, see docs/fleet_plane.md) and puts one event on the
    rulebook's queue per change, under the key C(scheduled_event), in the same shape as the
    P(azure_maintenance.scheduled_events.scheduled_events#event_source) source plus the ARM keys of
    M(azure_maintenance.scheduled_events.scheduled_events_fleet_info).
  - Answers Event Grid's subscription validation handshake (C(Microsoft.EventGrid.SubscriptionValidationEvent) for the
    Event Grid schema, the C(OPTIONS) abuse-protection request for CloudEvents 1.0), and accepts both schemas, single
    or batched.
  - "Every request must carry the shared O(secret) (as the C(code) query parameter of the webhook URL, or in an
    C(aeg-sas-key) header set as a delivery attribute) or the bearer O(token) (C(Authorization: Bearer ...)); others get
    HTTP 401 and are not looked at. Without either, the source refuses to start unless O(allow_unauthenticated) is set."
  - "A change is V(new) (first delivery of an event), V(started) (it became Started), V(changed) (another field
    changed), or V(removed) (Completed or Canceled: C(event_status) says which; also the first delivery of an event
    that is already over). Event Grid delivers at least once and not always in order, so a repeated delivery of the
    same state emits nothing, and neither does an older one: a C(resourceEventTime) before the last one seen, a status
    going back (Started to Scheduled), or anything after V(removed). A finished event is remembered for 24 hours,
    as long as Event Grid retries."
  - C(meta.hosts) lists the VMs in the event's C(Resources), renamed through O(host_map).
  - Event Grid only delivers to HTTPS endpoints; give O(certfile) and O(keyfile), or put a TLS proxy in front.
author:
  - azure_maintenance.scheduled_events contributors
options:
  host:
    description: Address to listen on.
    type: str
    default: 0.0.0.0
  port:
    description: Port to listen on (0 lets the system choose; the port is logged).
    type: int
    default: 5000
  path:
    description: URL path Event Grid delivers to.
    type: str
    default: /eventgrid
  secret:
    description: Shared secret expected as the C(code) query parameter or the C(aeg-sas-key) header.
    type: str
  token:
    description: Bearer token expected in C(Authorization).
    type: str
  allow_unauthenticated:
    description: Accept requests without O(secret) or O(token) configured (only for tests on loopback).
    type: bool
    default: false
  certfile:
    description: PEM certificate (chain) to serve HTTPS with.
    type: str
  keyfile:
    description: PEM private key of O(certfile).
    type: str
  changes:
    description: Which changes to emit. A list, or a comma-separated string.
    type: list
    elements: str
    choices: [new, started, changed, removed]
    default: [new, started, changed, removed]
  host_map:
    description:
      - Inventory host name for each VM name of C(Resources), used for C(meta.hosts). Names are matched without
        regard to case; names not in the map are used as they are.
    type: dict
    default: {}
notes:
  - "Each event looks like C({scheduled_event: {event_id, event_type, event_status, event_source, resources,
    not_before, not_before_raw, description, duration_in_seconds, resource_type, leader, seconds_until_not_before,
    arm_id, arm_ids, arm_resources, subscription_id, resource_group, location, change, previous, event_time,
    source}, meta: {hosts}}) with C(source) V(eventgrid)."
'''

EXAMPLES = r'''
- name: Azure maintenance pushed by Event Grid
  hosts: all
  sources:
    - azure_maintenance.scheduled_events.scheduled_events_eventgrid:
        port: 5443
        certfile: /etc/eda/tls/cert.pem
        keyfile: /etc/eda/tls/key.pem
        secret: "{{ eventgrid_secret }}"
  rules:
    - name: Roll maintenance over the hosts of each new event
      condition: event.scheduled_event.change == "new" and event.scheduled_event.event_status == "Scheduled"
      action:
        run_playbook:
          name: azure_maintenance.scheduled_events.rolling_maintenance
'''


def _make_collection_importable():
    """Put the collection root of this file on sys.path when Python cannot find the collection yet.

    ansible-rulebook loads a source with runpy from the installed collection
    but does not make ``ansible_collections`` importable.
    """
    try:
        __import__('ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_graph')
        return
    except ImportError:
        pass
    collection_dir = os.path.dirname(os.path.abspath(__file__))
    for dummy in range(4):  # event_source -> plugins -> eda -> extensions -> <collection>
        collection_dir = os.path.dirname(collection_dir)
    root = os.path.dirname(os.path.dirname(os.path.dirname(collection_dir)))
    if os.path.basename(os.path.dirname(os.path.dirname(collection_dir))) != 'ansible_collections':
        raise ImportError('The scheduled_events_eventgrid source was loaded from outside an installed collection '
                          '(.../ansible_collections/azure_maintenance/scheduled_events/); install the collection '
                          'with ansible-galaxy collection install')
    if root not in sys.path:
        sys.path.append(root)


_make_collection_importable()

# pylint: disable=wrong-import-position
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import (  # noqa: E402
    InvalidParameterError,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_graph import (  # noqa: E402
    normalize_rows,
    status_rank,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_select import (  # noqa: E402
    event_id_key,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_time import (  # noqa: E402
    parse_timestamp,
)

LOGGER_NAME = 'azure_maintenance.scheduled_events.eda.eventgrid'
EVENT_KEY = 'scheduled_event'
EMITTED_TYPE = 'Microsoft.ResourceNotifications.MaintenanceResources.ScheduledEventEmitted'
VALIDATION_TYPE = 'Microsoft.EventGrid.SubscriptionValidationEvent'
CHANGES = ('new', 'started', 'changed', 'removed')
_FINISHED = ('completed', 'canceled')
# Event Grid retries a delivery for up to 24 hours: a finished event's id is
# kept that long, so that a late retry of it is recognised as one.
FINISHED_KEPT_SECONDS = 24 * 3600
_COMPARED = ('event_status', 'event_type', 'resources', 'not_before_raw', 'description', 'event_source',
             'duration_in_seconds')
_OPTIONS = ('host', 'port', 'path', 'secret', 'token', 'allow_unauthenticated', 'certfile', 'keyfile', 'changes',
            'host_map')
# Event Grid batches at most 1 MB.
_MAX_BODY_BYTES = 1024 * 1024


def _choices(value, known, option):
    if value is None:
        return tuple(known)
    if isinstance(value, str):
        value = [item.strip() for item in value.split(',') if item.strip()]
    if not isinstance(value, (list, tuple)) or not value:
        raise InvalidParameterError('%s must be a non-empty list taken from %s, got %r'
                                    % (option, ', '.join(known), value))
    wanted = []
    for item in value:
        item = str(item).strip().lower()
        if item not in known:
            raise InvalidParameterError('%s: %r is not one of %s' % (option, item, ', '.join(known)))
        if item not in wanted:
            wanted.append(item)
    return tuple(wanted)


def parse_args(args):
    """Validate the rulebook's arguments; a dict of settings, or InvalidParameterError saying what to fix."""
    args = dict(args or {})
    unknown = sorted(key for key in args if key not in _OPTIONS and not str(key).startswith('eda_'))
    if unknown:
        raise InvalidParameterError('unknown argument(s) %s for scheduled_events_eventgrid; known arguments are %s'
                                    % (', '.join(unknown), ', '.join(_OPTIONS)))
    host_map = args.get('host_map') or {}
    if not isinstance(host_map, dict) or not all(isinstance(host, str) and host for host in host_map.values()):
        raise InvalidParameterError('host_map must map VM names to inventory host names, got %r' % (host_map,))
    try:
        port = int(args.get('port', 5000))
    except (TypeError, ValueError):
        raise InvalidParameterError('port must be a number from 0 to 65535, got %r' % (args.get('port'),))
    if not 0 <= port <= 65535:
        raise InvalidParameterError('port must be a number from 0 to 65535, got %r' % (port,))
    allow = args.get('allow_unauthenticated', False)
    allow = allow if isinstance(allow, bool) else str(allow).strip().lower() in ('true', 'yes', 'on', '1')
    settings = {
        'host': str(args.get('host') or '0.0.0.0'),
        'port': port,
        'path': '/' + str(args.get('path') or '/eventgrid').lstrip('/'),
        'secret': args.get('secret') or None,
        'token': args.get('token') or None,
        'allow_unauthenticated': allow,
        'certfile': args.get('certfile') or None,
        'keyfile': args.get('keyfile') or None,
        'changes': _choices(args.get('changes'), CHANGES, 'changes'),
        'host_map': dict((str(name).lower(), host) for name, host in host_map.items()),
    }
    if not (settings['secret'] or settings['token'] or settings['allow_unauthenticated']):
        raise InvalidParameterError('give secret (the code query parameter of the webhook URL) or token (a bearer '
                                    'token): anyone who can reach the port could otherwise inject maintenance events')
    if bool(settings['certfile']) != bool(settings['keyfile']):
        raise InvalidParameterError('certfile and keyfile go together')
    return settings


def authorized(settings, headers, query):
    """True if the request carries the configured secret or token (compared in constant time)."""
    if not (settings['secret'] or settings['token']):
        return settings['allow_unauthenticated']
    lowered = dict((str(key).lower(), value) for key, value in headers.items())
    if settings['secret']:
        for offered in (query.get('code'), lowered.get('aeg-sas-key')):
            if offered and hmac.compare_digest(str(offered), settings['secret']):
                return True
    if settings['token']:
        scheme, dummy, offered = (lowered.get('authorization') or '').partition(' ')
        if scheme.lower() == 'bearer' and hmac.compare_digest(offered.strip(), settings['token']):
            return True
    return False


def split_delivery(body):
    """``(validation_code or None, [(event_time, resourceInfo), ...], ignored_types)`` of a delivery body.

    Accepts the Event Grid schema (a list of events with ``eventType``) and
    CloudEvents 1.0 (one event, or a batch list, with ``type``).
    """
    items = body if isinstance(body, list) else [body]
    validation_code, emitted, ignored = None, [], []
    for item in items:
        if not isinstance(item, dict):
            ignored.append(type(item).__name__)
            continue
        kind = item.get('eventType') or item.get('type')
        data = item.get('data') if isinstance(item.get('data'), dict) else {}
        if kind == VALIDATION_TYPE:
            validation_code = data.get('validationCode')
        elif kind == EMITTED_TYPE and isinstance(data.get('resourceInfo'), dict):
            operational = data.get('operationalInfo') if isinstance(data.get('operationalInfo'), dict) else {}
            emitted.append((operational.get('resourceEventTime') or item.get('eventTime') or item.get('time'),
                            data['resourceInfo']))
        else:
            ignored.append(str(kind))
    return validation_code, emitted, ignored


def is_stale(previous, previous_time, event, event_time):
    """Whether a delivery carries an older state of the event than the one already seen.

    Event Grid delivers at least once and not in order: a retry can come after
    a newer state. Older means: anything after the event finished (Completed or
    Canceled; an event never comes back), a ``resourceEventTime`` before the
    seen one's (``previous_time``, ``event_time``: epochs or None), or a status
    that goes back (Started to Scheduled).
    """
    if previous is None:
        return False
    if str(previous.get('event_status')).lower() in _FINISHED:
        return True
    if previous_time is not None and event_time is not None and event_time < previous_time:
        return True
    return status_rank(event) < status_rank(previous)


def change_of(previous, event):
    """The change ``event`` makes after ``previous`` (None: never seen), or None for a repeated delivery."""
    status = str(event.get('event_status')).lower()
    if previous is None:
        # First seen finished (its earlier deliveries came before the source
        # started): "new" would have a rulebook prepare for what is over.
        return 'removed' if status in _FINISHED else 'new'
    if all(previous.get(key) == event.get(key) for key in _COMPARED):
        return None
    if status in _FINISHED:
        return 'removed'
    if status == 'started' and str(previous.get('event_status')).lower() != 'started':
        return 'started'
    return 'changed'


class EventGridReceiver(object):
    """Turns deliveries into rulebook events; ``handle`` is the HTTP-free core, ``serve`` the aiohttp edge."""

    def __init__(self, settings, queue, logger=None, clock=time.monotonic):
        self.settings = settings
        self.queue = queue
        self.log = logger or logging.getLogger(LOGGER_NAME)
        self.clock = clock
        # {event id key: (the event as last seen, its resourceEventTime as an epoch or None)}
        self.last_seen = {}
        # {event id key: clock reading when it finished}: to forget it after FINISHED_KEPT_SECONDS.
        self.finished_at = {}
        self.port = None

    def hosts_for(self, event):
        hosts = []
        for vm_name in event.get('resources') or []:
            host = self.settings['host_map'].get(str(vm_name).lower(), vm_name)
            if host not in hosts:
                hosts.append(host)
        return hosts

    async def emit(self, event_time, resource_info):
        events, warnings = normalize_rows([resource_info])
        for warning in warnings:
            self.log.warning(warning)
        self.forget_finished()
        moment = parse_timestamp(event_time)
        for event in events:
            key = event_id_key(event['event_id'])
            previous, previous_time = self.last_seen.get(key, (None, None))
            if is_stale(previous, previous_time, event, moment):
                self.log.debug('Ignored an older delivery of event %s (%s at %s)', event['event_id'],
                               event.get('event_status'), event_time)
                continue
            change = change_of(previous, event)
            if change is None:
                continue
            self.last_seen[key] = (event, moment if moment is not None else previous_time)
            if str(event.get('event_status')).lower() in _FINISHED:
                self.finished_at[key] = self.clock()
            if change not in self.settings['changes']:
                continue
            payload = dict(event, change=change, previous=previous if change in ('started', 'changed') else None,
                           event_time=event_time, source='eventgrid')
            await self.queue.put({EVENT_KEY: payload, 'meta': {'hosts': self.hosts_for(event)}})

    def forget_finished(self):
        """Drop the events that finished more than FINISHED_KEPT_SECONDS ago: memory stays flat for months."""
        now = self.clock()
        for key in [key for key, finished in self.finished_at.items() if now - finished > FINISHED_KEPT_SECONDS]:
            del self.finished_at[key]
            self.last_seen.pop(key, None)

    async def handle(self, method, headers, query, body):
        """``(status, JSON answer or None, extra headers)`` for one request."""
        if not authorized(self.settings, headers, query):
            return 401, {'error': 'missing or wrong secret/token'}, {}
        if method == 'OPTIONS':
            # CloudEvents abuse protection: allow the origin that asks.
            origin = dict((key.lower(), value) for key, value in headers.items()).get('webhook-request-origin', '')
            return 200, None, {'WebHook-Allowed-Origin': origin or '*', 'WebHook-Allowed-Rate': '*'}
        if method != 'POST':
            return 405, {'error': 'Event Grid delivers with POST'}, {}
        try:
            parsed = json.loads(body.decode('utf-8'))
        except (ValueError, UnicodeDecodeError):
            return 400, {'error': 'the body is not JSON'}, {}
        validation_code, emitted, ignored = split_delivery(parsed)
        if validation_code is not None:
            self.log.info('Answered the Event Grid subscription validation handshake')
            return 200, {'validationResponse': validation_code}, {}
        if ignored:
            self.log.info('Ignored %d delivered item(s) of other types: %s', len(ignored), ', '.join(ignored))
        for event_time, resource_info in emitted:
            await self.emit(event_time, resource_info)
        return 200, None, {}

    async def serve(self):
        """Listen until cancelled."""
        from aiohttp import web  # pylint: disable=import-outside-toplevel

        async def on_request(request):
            body = await request.read() if request.can_read_body else b''
            status, answer, extra = await self.handle(request.method, dict(request.headers), dict(request.query),
                                                      body)
            if answer is None:
                return web.Response(status=status, headers=extra)
            return web.json_response(answer, status=status, headers=extra)

        app = web.Application(client_max_size=_MAX_BODY_BYTES)
        app.router.add_route('*', self.settings['path'], on_request)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        context = None
        if self.settings['certfile']:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(self.settings['certfile'], self.settings['keyfile'])
        site = web.TCPSite(runner, self.settings['host'], self.settings['port'], ssl_context=context)
        try:
            await site.start()
            self.port = site._server.sockets[0].getsockname()[1]  # pylint: disable=protected-access
            self.log.info('Listening for Event Grid deliveries on %s:%d%s', self.settings['host'], self.port,
                          self.settings['path'])
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()


async def main(queue, args):
    """Entry point called by ansible-rulebook: emit the changes Event Grid delivers until cancelled."""
    await EventGridReceiver(parse_args(args), queue).serve()


if __name__ == '__main__':
    class _PrintingQueue(object):
        async def put(self, event):
            print(json.dumps(event), flush=True)

    logging.basicConfig(level=logging.INFO)
    try:
        asyncio.run(main(_PrintingQueue(), {'host': '127.0.0.1', 'port': int(sys.argv[1]) if len(sys.argv) > 1
                                            else 5000, 'allow_unauthenticated': True}))
    except KeyboardInterrupt:
        pass
