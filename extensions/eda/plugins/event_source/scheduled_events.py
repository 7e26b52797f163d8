# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Event-Driven Ansible source: one event per change of the Azure Scheduled Events document."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import asyncio
import logging
import os
import sys
import threading
import time

DOCUMENTATION = r'''
---
short_description: Turn Azure Scheduled Events into Event-Driven Ansible events
description:
  - Polls the Azure Instance Metadata Service (IMDS) Scheduled Events endpoint of the VM it runs on and puts one
    event on the rulebook's queue for every change of the document, under the key C(scheduled_event).
  - "A change is one of: V(new) (an event appeared), V(started) (a Scheduled event moved to Started), V(changed)
    (another field changed, for example Azure moved NotBefore), V(removed) (the event is over or was cancelled:
    IMDS has no Completed status, events just disappear)."
  - Each change is emitted once. The document is compared event by event with the last one read successfully, so a
    poll that failed and was retried, or a document whose DocumentIncarnation did not move, emits nothing again.
    When the source starts, every event already pending is emitted as V(new).
  - An event that arrives already Started (host hardware failure) is emitted once with change V(new) and
    C(event_status=Started); it is emitted when O(changes) holds V(new) or V(started).
  - C(meta.hosts) lists the VMs in the event's C(Resources), renamed through O(host_map), so a rule can run a
    playbook against the affected hosts.
  - IMDS faults (throttling, HTTP 410 and 5xx, time-outs, malformed answers, refused connections) are logged (once,
    then at most once a minute) and polled through with a capped backoff that honours C(Retry-After). A fault that
    no retry can cure (HTTP 400 or 404, a redirect) stops the source only if it happens before the first successful
    poll, because that means the configuration is wrong.
  - The polling, backoff, identity and change tracking are the collection's shared poller, the same the
    C(scheduled_events_service) daemon uses.
  - HTTP requests run in a worker thread, so the rulebook's event loop never waits for IMDS. Cancelling the source
    stops it at once.
  - IMDS is only reachable from inside the VM, so run ansible-rulebook with this source on an Azure VM (one per
    availability set or scale-set placement group is enough, since every VM of the set sees every event of the set),
    or use the C(scheduled_events_service) role's webhook with an C(ansible.eda.webhook) source instead.
  - The collection must be installed (C(ansible-galaxy collection install)), because the source imports the
    collection's shared Scheduled Events code from where it is installed.
author:
  - azure_maintenance.scheduled_events contributors
options:
  endpoint:
    description:
      - URL of the IMDS Scheduled Events endpoint, without query string.
      - Set it to reach the IMDS simulator. The VM's name is read from the instance metadata on the same scheme, host
        and port.
      - Proxy settings are never applied and redirects never followed; IMDS must be reached directly.
    type: str
    default: http://169.254.169.254/metadata/scheduledevents
  api_version:
    description:
      - The Scheduled Events C(api-version) to request. Fields an older version lacks are V(null) in the events.
    type: str
    default: '2020-07-01'
  poll_interval:
    description:
      - Seconds between two polls. Azure recommends polling once per second; some events give only 30 seconds of
        notice.
      - At least 0.25, because IMDS throttles at about 5 requests per second for all clients of a VM together.
    type: float
    default: 1
  resource_name:
    description:
      - This VM's name as it appears in C(Resources) (for a scale-set instance something like C(myScaleSet_3)).
      - When not set, it is read from the instance metadata, and asked for again on every poll (with a backoff) until
        IMDS answers; it is never guessed from the host name. Until it is known, C(affects_this_vm), C(is_leader) and
        C(resource_name) of emitted events are V(null) (the event is possibly this VM's), and a warning says so.
      - It decides C(affects_this_vm) and C(is_leader) of every event.
    type: str
  changes:
    description:
      - Which changes to emit. A list, or a comma-separated string.
    type: list
    elements: str
    choices: [new, started, changed, removed]
    default: [new, started, changed, removed]
  only_this_vm:
    description:
      - Emit only changes of events whose C(Resources) include this VM, or may include it while this VM's name is not
        known yet (see O(resource_name)). An event emitted then, which turns out to be another VM's once the name is
        known, still gets its V(removed), so that a rule can undo what it did for it.
      - Every VM of an availability set or scale-set placement group sees the events of all of them; with V(false)
        one VM can watch the whole set.
    type: bool
    default: false
  host_map:
    description:
      - Inventory host name for each VM name of C(Resources), used for C(meta.hosts). Names are matched without
        regard to case; names not in the map are used as they are.
    type: dict
    default: {}
  timeout:
    description:
      - Seconds to wait for each answer once connected. The very first request of a VM enables Scheduled Events and
        is given at least 130 seconds, once.
    type: float
    default: 10
  retries:
    description:
      - Quick retries of a failed request within one poll (throttling, 5xx, HTTP 410, time-outs, connection failures),
        all within O(poll_interval) or O(timeout), whichever is longer. After that the poll counts as failed and the
        next one waits longer (backoff up to 10 seconds, or O(poll_interval) if that is longer).
      - The same option, with the same default, as the collection's modules and lookup.
    type: int
    default: 5
  deadline:
    description:
      - The most seconds one request may take in all, retries included; it bounds the very first request, which may
        take two minutes while IMDS enables Scheduled Events.
      - The same option, with the same default, as the collection's modules and lookup.
    type: float
    default: 150
notes:
  - "Each event looks like C({scheduled_event: {event_id, event_type, event_status, event_source, resources,
    not_before, not_before_raw, description, duration_in_seconds, resource_type, affects_this_vm, leader, is_leader,
    seconds_until_not_before, change, previous, document_incarnation, resource_name, endpoint}, meta: {hosts}}).
    C(previous) is the event as it was before a V(started) or V(changed) change, otherwise V(null)."
'''

EXAMPLES = r'''
# Watch this VM's Scheduled Events and print every change.
- name: Azure maintenance
  hosts: localhost
  sources:
    - azure_maintenance.scheduled_events.scheduled_events:
        poll_interval: 1
  rules:
    - name: Log every change
      condition: event.scheduled_event is defined
      action:
        debug:
          msg: "{{ event.scheduled_event.change }} {{ event.scheduled_event.event_type }} {{ event.scheduled_event.event_id }}"

# Only events that affect this VM, only when they appear, with inventory names for meta.hosts.
- name: Azure maintenance of the web tier
  hosts: all
  sources:
    - azure_maintenance.scheduled_events.scheduled_events:
        changes: [new]
        only_this_vm: true
        host_map:
          web_vm_0: web0.example.com
          web_vm_1: web1.example.com
  rules:
    - name: Drain and approve
      condition: event.scheduled_event.event_source == "Platform"
      action:
        run_playbook:
          name: azure_maintenance.scheduled_events.rolling_maintenance
'''


def _make_collection_importable():
    """Put the collection root of this file on sys.path when Python cannot find the collection yet.

    ansible-rulebook loads a source with runpy from the installed collection
    but does not make ``ansible_collections`` importable, and this source
    shares the collection's Scheduled Events core rather than copying it.
    """
    try:
        __import__('ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_client')
        return
    except ImportError:
        pass
    # Not realpath: a collection linked into a collections directory must be
    # found through the link, where the ansible_collections layout is.
    here = os.path.dirname(os.path.abspath(__file__))
    collection_dir = here
    for dummy in range(4):  # event_source -> plugins -> eda -> extensions -> <collection>
        collection_dir = os.path.dirname(collection_dir)
    namespace_dir = os.path.dirname(collection_dir)
    collections_dir = os.path.dirname(namespace_dir)
    if (os.path.basename(collection_dir), os.path.basename(namespace_dir), os.path.basename(collections_dir)) != \
            ('scheduled_events', 'azure_maintenance', 'ansible_collections'):
        raise ImportError('The scheduled_events event source was loaded from %s, which is not inside an installed '
                          'collection (.../ansible_collections/azure_maintenance/scheduled_events/), so it cannot '
                          'import the collection\'s code. Install the collection with ansible-galaxy collection '
                          'install and refer to the source as azure_maintenance.scheduled_events.scheduled_events.'
                          % here)
    root = os.path.dirname(collections_dir)
    if root not in sys.path:
        sys.path.append(root)


_make_collection_importable()

# pylint: disable=wrong-import-position
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import (  # noqa: E402
    InvalidParameterError,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_options import (  # noqa: E402
    COMMON_ARGUMENT_SPEC,
    client_from_options,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_poller import (  # noqa: E402
    CHANGE_NEW,
    CHANGE_REMOVED,
    CHANGE_STARTED,
    CHANGES,
    MAX_POLL_BACKOFF_SECONDS,
    Poller,
    incarnation_reset_message,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_select import (  # noqa: E402
    event_id_key,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_wait import (  # noqa: E402
    DEFAULT_POLL_INTERVAL,
    validate_poll_interval,
)

LOGGER_NAME = 'azure_maintenance.scheduled_events.eda'
EVENT_KEY = 'scheduled_event'
# The shared poller's cap, named here for readers of this source.
MAX_BACKOFF_SECONDS = MAX_POLL_BACKOFF_SECONDS

_OPTIONS = ('endpoint', 'api_version', 'poll_interval', 'resource_name', 'changes', 'only_this_vm', 'host_map',
            'timeout', 'retries', 'deadline')
_TRUE_WORDS = ('true', 'yes', 'on', '1')
_FALSE_WORDS = ('false', 'no', 'off', '0')


def _as_bool(name, value):
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE_WORDS + _FALSE_WORDS:
        return value.strip().lower() in _TRUE_WORDS
    raise InvalidParameterError('%s must be true or false, got %r' % (name, value))


def _as_number(name, value, kind):
    if isinstance(value, bool):
        raise InvalidParameterError('%s must be a number, got %r' % (name, value))
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise InvalidParameterError('%s must be a number, got %r' % (name, value))


def _as_changes(value):
    if value is None:
        return CHANGES
    if isinstance(value, str):
        value = [item.strip() for item in value.split(',') if item.strip()]
    if not isinstance(value, (list, tuple)) or not value:
        raise InvalidParameterError('changes must be a non-empty list taken from %s, got %r' % (', '.join(CHANGES), value))
    wanted = []
    for item in value:
        item = str(item).strip().lower()
        if item not in CHANGES:
            raise InvalidParameterError('changes: %r is not one of %s' % (item, ', '.join(CHANGES)))
        if item not in wanted:
            wanted.append(item)
    return tuple(wanted)


def _as_host_map(value):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidParameterError('host_map must be a mapping of VM names to inventory host names, got %r' % (value,))
    host_map = {}
    for vm_name, host in value.items():
        if not isinstance(host, str) or not host:
            raise InvalidParameterError('host_map: the inventory host of %r must be a non-empty string, got %r'
                                        % (vm_name, host))
        host_map[str(vm_name).lower()] = host
    return host_map


def parse_args(args):
    """Validate the rulebook's arguments; return a dict of settings or raise InvalidParameterError."""
    args = dict(args or {})
    # ansible-rulebook adds its own eda_* arguments (the feedback queue).
    unknown = sorted(key for key in args if key not in _OPTIONS and not str(key).startswith('eda_'))
    if unknown:
        raise InvalidParameterError('unknown argument(s) %s for azure_maintenance.scheduled_events.scheduled_events; '
                                    'known arguments are %s' % (', '.join(unknown), ', '.join(_OPTIONS)))

    def given(name):
        return args.get(name) is not None and args.get(name) != ''

    def common(name, kind):
        # Defaults from the shared option layer: one default per option, everywhere.
        if not given(name):
            return COMMON_ARGUMENT_SPEC[name].get('default')
        return _as_number(name, args[name], kind) if kind is not str else str(args[name])

    settings = {
        'endpoint': common('endpoint', str),
        'api_version': common('api_version', str),
        'resource_name': common('resource_name', str),
        'poll_interval': validate_poll_interval(_as_number('poll_interval', args['poll_interval'], float)
                                                if given('poll_interval') else DEFAULT_POLL_INTERVAL),
        'changes': _as_changes(args.get('changes')),
        'only_this_vm': _as_bool('only_this_vm', args['only_this_vm']) if given('only_this_vm') else False,
        'host_map': _as_host_map(args.get('host_map')),
        'timeout': common('timeout', float),
        'retries': common('retries', int),
        'deadline': common('deadline', float),
    }
    return settings


class ScheduledEventsSource(object):
    """Polls one IMDS endpoint and puts one rulebook event per change on a queue.

    ``client`` (an ImdsClient), ``sleep`` (an async sleep) and ``clock`` (the
    poller's monotonic clock) are injectable for tests; by default the client is built from the settings with the
    core's stdlib transport.
    """

    def __init__(self, settings, client=None, sleep=None, logger=None, clock=None):
        self.settings = settings
        self.client = client if client is not None else client_from_options(settings)
        self.sleep = sleep or asyncio.sleep
        self.log = logger or logging.getLogger(LOGGER_NAME)
        self.poller = Poller(self.client, settings['poll_interval'], resource_name=settings.get('resource_name'),
                             clock=clock or time.monotonic)
        self._thread_lock = threading.Lock()
        self._threads_running = 0
        self._stopping = False
        # Ids of the present events a rulebook has heard of: with only_this_vm,
        # an event emitted while this VM's name was unknown (possibly ours)
        # still gets its "removed", so that what a rule did for it is undone.
        self._emitted = set()

    @property
    def resource_name(self):
        """This VM's name, or None while IMDS has not told it yet."""
        return self.poller.identity.name

    @property
    def failures_in_a_row(self):
        return self.poller.backoff.failures

    async def _in_thread(self, func, *args):
        """Run a blocking client call in a daemon thread and await its result.

        Not asyncio.to_thread: the default executor's threads are joined when
        the loop and the interpreter shut down, so a request stuck in the
        130-second first call would hold up the rulebook's exit. A cancelled
        caller returns at once; the thread finishes its request on its own.
        """
        loop = asyncio.get_running_loop()
        future = loop.create_future()

        def deliver(outcome, value):
            if future.cancelled():
                return
            if outcome == 'result':
                future.set_result(value)
            else:
                future.set_exception(value)

        def work():
            try:
                outcome, value = 'result', func(*args)
            except BaseException as exc:  # pylint: disable=broad-except  # the awaiting coroutine decides
                outcome, value = 'exception', exc
            finally:
                with self._thread_lock:
                    self._threads_running -= 1
                    close_now = self._stopping and self._threads_running == 0
                if close_now:
                    self.client.close()
            try:
                loop.call_soon_threadsafe(deliver, outcome, value)
            except RuntimeError:
                pass  # the loop is closed: nobody waits for this answer any more

        with self._thread_lock:
            self._threads_running += 1
        threading.Thread(target=work, name='scheduled-events-eda-poll', daemon=True).start()
        return await future

    def _stop(self):
        # The connection belongs to whichever thread uses it last: close it
        # here only when no request is in flight, else the thread does.
        with self._thread_lock:
            self._stopping = True
            close_now = self._threads_running == 0
        if close_now:
            self.client.close()

    def _log_retried_attempts(self):
        # The core records every attempt; a long-running poller must empty
        # the record or it grows forever, and the retries are worth a line.
        attempts = list(self.client.attempt_log)
        del self.client.attempt_log[:]
        for method, url, outcome in attempts:
            if not (isinstance(outcome, int) and 200 <= outcome < 300):
                self.log.info('IMDS attempt %s %s failed: %s', method, url, outcome)

    def hosts_for(self, event):
        """Inventory names of the VMs in the event's Resources, through host_map."""
        host_map = self.settings['host_map']
        hosts = []
        for vm_name in event.get('resources') or []:
            host = host_map.get(str(vm_name).lower(), vm_name)
            if host not in hosts:
                hosts.append(host)
        return hosts

    def _wanted(self, change, event):
        changes = self.settings['changes']
        if change in changes:
            return True
        # A hardware failure skips Scheduled: a consumer of "started" alone
        # must still hear of it.
        return change == CHANGE_NEW and CHANGE_STARTED in changes and event.get('event_status') == 'Started'

    def _rulebook_event(self, change, event, previous, incarnation):
        payload = self.poller.identity.annotate(event)
        payload['change'] = change
        payload['previous'] = previous
        payload['document_incarnation'] = incarnation
        payload['resource_name'] = self.resource_name
        payload['endpoint'] = self.client.endpoint
        return {EVENT_KEY: payload, 'meta': {'hosts': self.hosts_for(event)}}

    def rulebook_events(self, changes, incarnation):
        """The rulebook events for the poller's Changes, in its order."""
        emitted = []
        for kind, event, previous in changes.items:
            key = event_id_key(event.get('event_id'))
            heard_of = key in self._emitted
            if kind == CHANGE_REMOVED:
                self._emitted.discard(key)
            # False only once the name is known: an event that may be ours is kept.
            if self.settings['only_this_vm'] and self.poller.identity.affects(event) is False and not (
                    kind == CHANGE_REMOVED and heard_of):
                continue
            if self._wanted(kind, event):
                emitted.append(self._rulebook_event(kind, event, previous, incarnation))
                if kind != CHANGE_REMOVED:
                    self._emitted.add(key)
        return emitted

    async def poll_once(self, queue):
        """One round of the shared poller; emit its changes. Returns the seconds to wait before the next poll."""
        result = await self._in_thread(self.poller.poll)
        self._log_retried_attempts()
        for level, text in result.messages:
            getattr(self.log, level)('%s', text)
        if not result.ok:
            if not result.error.retryable and self.poller.polls_succeeded == 0:
                raise result.error
            return result.delay
        incarnation = result.document['document_incarnation']
        if result.changes.incarnation_reset:
            self.log.info('%s', incarnation_reset_message(result.changes.incarnation_reset))
        for rulebook_event in self.rulebook_events(result.changes, incarnation):
            await queue.put(rulebook_event)
            self.log.debug('Emitted %s of event %s', rulebook_event[EVENT_KEY]['change'],
                           rulebook_event[EVENT_KEY]['event_id'])
        return result.delay

    async def run(self, queue):
        """Poll until cancelled."""
        loop = asyncio.get_running_loop()
        self.log.info('Watching Scheduled Events at %s as VM %s', self.client.events_url,
                      repr(self.resource_name) if self.resource_name else '(name to be asked from IMDS)')
        try:
            while True:
                started = loop.time()
                delay = await self.poll_once(queue)
                await self.sleep(max(0.0, delay - (loop.time() - started)))
        finally:
            self._stop()


async def main(queue, args):
    """Entry point called by ansible-rulebook: emit Scheduled Events changes onto ``queue`` until cancelled."""
    settings = parse_args(args)
    await ScheduledEventsSource(settings).run(queue)


if __name__ == '__main__':
    # Runs the source alone and prints what a rulebook would receive:
    # python scheduled_events.py [endpoint]
    class _PrintingQueue(object):
        async def put(self, event):
            print(event, flush=True)

    logging.basicConfig(level=logging.INFO)
    _cli_args = {'endpoint': sys.argv[1]} if len(sys.argv) > 1 else {}
    try:
        asyncio.run(main(_PrintingQueue(), _cli_args))
    except KeyboardInterrupt:
        pass
