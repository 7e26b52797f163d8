"""Event Grid push deliveries of the world's Resource Graph rows to one webhook.

Like an Event Grid subscription to the system topic of a subscription: the
webhook must first pass the validation handshake (a
``Microsoft.EventGrid.SubscriptionValidationEvent`` answered with
``{"validationResponse": code}`` for the Event Grid schema; the CloudEvents
``OPTIONS`` abuse-protection request answered with ``WebHook-Allowed-Origin``
for CloudEvents 1.0), then gets one delivery each time a row appears or
changes. Failed deliveries are retried a few times with a short backoff and
then dropped, as Event Grid dead-letters them; every attempt is logged.
"""

import json
import logging
import threading
import time
import urllib.error
import urllib.request
import uuid

from .clock import format_iso

__all__ = ['EVENT_TYPE', 'VALIDATION_EVENT_TYPE', 'SCHEMAS', 'Deliverer', 'envelope', 'row_fingerprint']

EVENT_TYPE = 'Microsoft.ResourceNotifications.MaintenanceResources.ScheduledEventEmitted'
VALIDATION_EVENT_TYPE = 'Microsoft.EventGrid.SubscriptionValidationEvent'
EVENT_GRID_SCHEMA = 'EventGridSchema'
CLOUD_EVENTS_SCHEMA = 'CloudEventSchemaV1_0'
SCHEMAS = (EVENT_GRID_SCHEMA, CLOUD_EVENTS_SCHEMA)
_ORIGIN = 'eventgrid.azure.net'
_TIMEOUT_SECONDS = 5
_LOG = logging.getLogger('imds_simulator.eventgrid')


def row_fingerprint(row):
    """What makes a row worth a new delivery when it changes."""
    return json.dumps(row['properties'], sort_keys=True)


def _topic(row):
    return '/subscriptions/%s' % row['subscriptionId']


def _subject(row):
    """The VM's (or scale set's) ARM id: the row id without the scheduledevents part."""
    return row['id'].split('/providers/Microsoft.Maintenance/', 1)[0]


def event_data(row, event_time):
    return {
        'resourceInfo': {'id': row['id'], 'name': row['name'], 'type': row['type'], 'location': row['location'],
                         'properties': row['properties']},
        'operationalInfo': {'resourceEventTime': event_time},
        'apiVersion': '2023-10-01-preview',
    }


def envelope(row, schema, event_time):
    """One delivery body (bytes) and its content type for ``row`` in ``schema``."""
    event_id = str(uuid.uuid4())
    data = event_data(row, event_time)
    if schema == CLOUD_EVENTS_SCHEMA:
        event = {'specversion': '1.0', 'id': event_id, 'source': _topic(row), 'subject': _subject(row),
                 'type': EVENT_TYPE, 'time': event_time, 'datacontenttype': 'application/json', 'data': data}
        return json.dumps(event).encode('utf-8'), 'application/cloudevents+json; charset=utf-8'
    event = {'id': event_id, 'topic': _topic(row), 'subject': _subject(row), 'eventType': EVENT_TYPE,
             'eventTime': event_time, 'data': data, 'dataVersion': '1', 'metadataVersion': '1'}
    return json.dumps([event]).encode('utf-8'), 'application/json; charset=utf-8'


def validation_envelope(code, event_time):
    event = {'id': str(uuid.uuid4()), 'topic': '/subscriptions/simulator', 'subject': '',
             'eventType': VALIDATION_EVENT_TYPE, 'eventTime': event_time,
             'data': {'validationCode': code, 'validationUrl': ''}, 'dataVersion': '2', 'metadataVersion': '1'}
    return json.dumps([event]).encode('utf-8')


class Deliverer:
    """Pushes row changes to ``settings['webhook']`` on its own thread."""

    def __init__(self, settings, rows_now, clock_now, log):
        self.settings = settings
        self._rows_now = rows_now
        self._clock_now = clock_now
        self.log = log
        self.validated = False
        self._sent = {}
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name='eventgrid-deliverer', daemon=True)

    def start(self):
        self._thread.start()

    def stop(self):
        self._stopping.set()
        self._thread.join(timeout=_TIMEOUT_SECONDS * 2)

    def _request(self, method, body=None, content_type=None, extra_headers=None):
        headers = dict(self.settings.get('headers') or {})
        headers.update(extra_headers or {})
        if content_type:
            headers['Content-Type'] = content_type
        request = urllib.request.Request(self.settings['webhook'], data=body, method=method, headers=headers)
        # Loopback webhooks only in tests: never through a proxy.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=_TIMEOUT_SECONDS) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers or {}), exc.read()
        except (OSError, ValueError) as exc:
            return None, {}, str(exc).encode('utf-8')

    def _validate(self):
        now = format_iso(self._clock_now())
        if self.settings['schema'] == CLOUD_EVENTS_SCHEMA:
            status, headers, dummy = self._request('OPTIONS', extra_headers={'WebHook-Request-Origin': _ORIGIN})
            allowed = {key.lower(): value for key, value in headers.items()}.get('webhook-allowed-origin', '')
            ok = status == 200 and allowed.strip() in (_ORIGIN, '*')
        else:
            code = str(uuid.uuid4()).upper()
            status, dummy, body = self._request('POST', validation_envelope(code, now), 'application/json',
                                                {'aeg-event-type': 'SubscriptionValidation'})
            try:
                ok = status == 200 and json.loads(body.decode('utf-8')).get('validationResponse') == code
            except (ValueError, AttributeError):
                ok = False
        self.log.append({'kind': 'validation', 'status': status, 'ok': ok, 'real_time': format_iso(time.time())})
        self.validated = ok

    def _deliver(self, row):
        body, content_type = envelope(row, self.settings['schema'], format_iso(self._clock_now()))
        for attempt in range(1, self.settings['max_attempts'] + 1):
            status, dummy, dummy = self._request('POST', body, content_type, {'aeg-event-type': 'Notification'})
            entry = {'kind': 'delivery', 'event_id': row['name'], 'row_id': row['id'],
                     'event_status': row['properties']['EventStatus'], 'attempt': attempt, 'status': status,
                     'real_time': format_iso(time.time())}
            self.log.append(entry)
            if status is not None and 200 <= status < 300:
                return True
            if self._stopping.wait(min(0.2 * 2 ** attempt, 2.0)):
                return False
        _LOG.warning('delivery of %s (%s) dropped after %d attempts', row['name'], row['properties']['EventStatus'],
                     self.settings['max_attempts'])
        return False

    def _run(self):
        while not self._stopping.wait(self.settings['poll_seconds']):
            try:
                if not self.validated:
                    self._validate()
                    continue
                for row in self._rows_now():
                    fingerprint = row_fingerprint(row)
                    if self._sent.get(row['id']) != fingerprint:
                        # Marked first: a dropped delivery is not retried forever.
                        self._sent[row['id']] = fingerprint
                        self._deliver(row)
            except Exception:  # pylint: disable=broad-except
                _LOG.exception('event grid delivery loop failed')
