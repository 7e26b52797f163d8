# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Event Grid event source: arguments, auth, both schemas, the handshakes, and deliveries pushed by the simulator."""

import asyncio
import importlib.util
import json
import os
import sys
import threading
import time

import pytest

from eda_collection import INSTALLED_COLLECTION

SIMULATOR_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'simulator')
if SIMULATOR_DIR not in sys.path:
    sys.path.insert(0, SIMULATOR_DIR)

from imds_simulator.arm_server import ArmFacade  # noqa: E402
from imds_simulator.simulator import Simulator  # noqa: E402

SOURCE_PATH = os.path.join(INSTALLED_COLLECTION, 'extensions', 'eda', 'plugins', 'event_source',
                           'scheduled_events_eventgrid.py')
EMITTED = 'Microsoft.ResourceNotifications.MaintenanceResources.ScheduledEventEmitted'
EVENT_ID = 'C7061BAC-AFDC-4513-B24B-AA5F13A16123'
ARM_ID = ('/subscriptions/sub-1/resourcegroups/rg-web/providers/Microsoft.Compute/virtualMachines/web-0/providers/'
          'Microsoft.Maintenance/scheduledevents/' + EVENT_ID)


@pytest.fixture(scope='module')
def source():
    spec = importlib.util.spec_from_file_location('scheduled_events_eventgrid_source', SOURCE_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ListQueue(object):
    def __init__(self):
        self.items = []

    async def put(self, item):
        self.items.append(item)


def resource_info(status='Scheduled', not_before='Mon, 11 Apr 2022 22:26:58 GMT'):
    return {'id': ARM_ID, 'name': EVENT_ID, 'type': 'microsoft.maintenance/scheduledevents', 'location': 'westeurope',
            'properties': {'EventId': EVENT_ID, 'EventStatus': status, 'EventType': 'Reboot',
                           'ResourceType': 'VirtualMachine', 'Resources': ['web-0', 'web-1'],
                           'NotBefore': not_before if status == 'Scheduled' else '', 'Description': 'planned',
                           'EventSource': 'Platform', 'DurationInSeconds': -1}}


def event_grid(info, time_text='2026-01-01T00:00:00Z'):
    return [{'id': 'x', 'topic': '/subscriptions/sub-1', 'subject': ARM_ID.split('/providers/Microsoft.M', maxsplit=1)[0],
             'eventType': EMITTED, 'eventTime': time_text, 'dataVersion': '1', 'metadataVersion': '1',
             'data': {'resourceInfo': info, 'operationalInfo': {'resourceEventTime': time_text}}}]


def cloud_event(info, time_text='2026-01-01T00:00:00Z'):
    return {'specversion': '1.0', 'id': 'y', 'source': '/subscriptions/sub-1', 'type': EMITTED, 'time': time_text,
            'data': {'resourceInfo': info, 'operationalInfo': {'resourceEventTime': time_text}}}


def settings(source, **args):
    base = {'secret': 's3cret', 'host': '127.0.0.1', 'port': 0}
    base.update(args)
    return source.parse_args(base)


def test_arguments_are_checked(source):
    with pytest.raises(source.InvalidParameterError, match='give secret'):
        source.parse_args({})
    with pytest.raises(source.InvalidParameterError, match='unknown argument'):
        source.parse_args({'secret': 'x', 'sekret': 'y'})
    with pytest.raises(source.InvalidParameterError, match='changes'):
        source.parse_args({'secret': 'x', 'changes': 'new,gone'})
    with pytest.raises(source.InvalidParameterError, match='certfile and keyfile'):
        source.parse_args({'secret': 'x', 'certfile': '/c.pem'})
    assert source.parse_args({'token': 't', 'changes': 'new, removed', 'eda_feedback': 1})['changes'] == \
        ('new', 'removed')


@pytest.mark.parametrize('headers, query, ok', [
    ({}, {'code': 's3cret'}, True),
    ({'aeg-sas-key': 's3cret'}, {}, True),
    ({'Authorization': 'Bearer tok'}, {}, True),
    ({'Authorization': 'Bearer wrong'}, {'code': 'nope'}, False),
    ({}, {}, False),
])
def test_secret_or_token(source, headers, query, ok):
    assert source.authorized(settings(source, token='tok'), headers, query) is ok


def run(coroutine):
    return asyncio.run(coroutine)


def test_validation_handshakes(source):
    receiver = source.EventGridReceiver(settings(source), ListQueue())
    validation = [{'eventType': 'Microsoft.EventGrid.SubscriptionValidationEvent', 'data': {'validationCode': 'ABC'}}]
    status, answer, dummy = run(receiver.handle('POST', {}, {'code': 's3cret'}, json.dumps(validation).encode()))
    assert (status, answer) == (200, {'validationResponse': 'ABC'})
    status, dummy, headers = run(receiver.handle('OPTIONS', {'WebHook-Request-Origin': 'eventgrid.azure.net'},
                                                 {'code': 's3cret'}, b''))
    assert status == 200 and headers['WebHook-Allowed-Origin'] == 'eventgrid.azure.net'
    assert run(receiver.handle('POST', {}, {}, json.dumps(validation).encode()))[0] == 401
    assert run(receiver.handle('POST', {}, {'code': 's3cret'}, b'not json'))[0] == 400


@pytest.mark.parametrize('wrap', [event_grid, cloud_event, lambda info: [cloud_event(info)]])
def test_both_schemas_give_the_normalized_event_once_per_change(source, wrap):
    queue = ListQueue()
    receiver = source.EventGridReceiver(settings(source, host_map={'WEB-0': 'web0.example.com'}), queue)

    def deliver(info):
        status, dummy, dummy = run(receiver.handle('POST', {}, {'code': 's3cret'}, json.dumps(wrap(info)).encode()))
        assert status == 200

    deliver(resource_info())
    deliver(resource_info())  # at-least-once delivery: a repeat emits nothing
    deliver(resource_info('Started'))
    deliver(resource_info('Completed'))
    changes = [item['scheduled_event']['change'] for item in queue.items]
    assert changes == ['new', 'started', 'removed']
    first = queue.items[0]
    event = first['scheduled_event']
    assert event['event_id'] == EVENT_ID and event['event_status'] == 'Scheduled'
    assert event['not_before'] == '2022-04-11T22:26:58Z' and event['leader'] == 'web-0'
    assert (event['arm_id'], event['subscription_id'], event['resource_group']) == (ARM_ID, 'sub-1', 'rg-web')
    assert event['source'] == 'eventgrid' and event['event_time'] == '2026-01-01T00:00:00Z'
    assert first['meta'] == {'hosts': ['web0.example.com', 'web-1']}
    assert queue.items[1]['scheduled_event']['previous']['event_status'] == 'Scheduled'
    assert queue.items[2]['scheduled_event']['event_status'] == 'Completed'


class FakeClock(object):
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def deliveries(source, states, receiver=None):
    """The changes emitted for ``states``: ``[(EventStatus, resourceEventTime), ...]`` delivered in that order."""
    queue = ListQueue()
    receiver = receiver or source.EventGridReceiver(settings(source), queue)
    receiver.queue = queue
    for status, time_text in states:
        body = json.dumps(event_grid(resource_info(status), time_text)).encode()
        assert run(receiver.handle('POST', {}, {'code': 's3cret'}, body))[0] == 200
    return [(item['scheduled_event']['change'], item['scheduled_event']['event_status']) for item in queue.items]


@pytest.mark.parametrize('states, expected', [
    # A retry of Started after the event completed: it does not start again.
    ([('Scheduled', 'T1'), ('Started', 'T2'), ('Completed', 'T3'), ('Started', 'T2')],
     [('new', 'Scheduled'), ('started', 'Started'), ('removed', 'Completed')]),
    # A retry of Scheduled after Started: the status does not go back, and Started is not emitted twice.
    ([('Scheduled', 'T1'), ('Started', 'T2'), ('Scheduled', 'T1'), ('Started', 'T2')],
     [('new', 'Scheduled'), ('started', 'Started')]),
    # Started delivered before Scheduled: the late Scheduled is older by its time.
    ([('Started', 'T2'), ('Scheduled', 'T1'), ('Completed', 'T3')],
     [('new', 'Started'), ('removed', 'Completed')]),
    # A change of the same status is older by its resourceEventTime alone.
    ([('Scheduled', 'T2'), ('Scheduled+', 'T1')], [('new', 'Scheduled')]),
    # Without times, the status order still holds.
    ([('Started', ''), ('Scheduled', ''), ('Canceled', ''), ('Started', '')],
     [('new', 'Started'), ('removed', 'Canceled')]),
    # First seen when it is already over (the source started late): nothing to prepare for.
    ([('Completed', 'T3'), ('Completed', 'T3')], [('removed', 'Completed')]),
])
def test_deliveries_out_of_order_emit_each_change_once_and_never_go_back(source, states, expected):
    times = {'T1': '2026-01-01T00:00:01.5Z', 'T2': '2026-01-01T00:00:02.1234567Z', 'T3': '2026-01-01T00:00:03Z', '': ''}
    queue = ListQueue()
    receiver = source.EventGridReceiver(settings(source), queue)
    for status, moment in states:
        info = resource_info(status.rstrip('+'))
        if status.endswith('+'):
            info['properties']['Description'] = 'changed by Azure'
        body = json.dumps(event_grid(info, times[moment])).encode()
        assert run(receiver.handle('POST', {}, {'code': 's3cret'}, body))[0] == 200
    assert [(item['scheduled_event']['change'], item['scheduled_event']['event_status'])
            for item in queue.items] == expected


def test_a_finished_event_is_forgotten_after_a_day_of_retries(source):
    clock = FakeClock()
    receiver = source.EventGridReceiver(settings(source), ListQueue(), clock=clock)
    assert deliveries(source, [('Scheduled', ''), ('Completed', '')], receiver) == [
        ('new', 'Scheduled'), ('removed', 'Completed')]
    clock.now += source.FINISHED_KEPT_SECONDS - 1
    assert deliveries(source, [('Started', '')], receiver) == []
    assert len(receiver.last_seen) == 1
    clock.now += 2
    # Any delivery lets the receiver drop what it no longer needs.
    other = dict(resource_info(), name='other')
    other['properties'] = dict(other['properties'], EventId='0B5E7C2D-3A41-4F6E-8D9C-2E1F0A3B4C5D')
    run(receiver.handle('POST', {}, {'code': 's3cret'}, json.dumps(event_grid(other)).encode()))
    assert list(receiver.last_seen) == ['0b5e7c2d-3a41-4f6e-8d9c-2e1f0a3b4c5d'] and receiver.finished_at == {}


def test_changes_filter_and_other_event_types(source):
    queue = ListQueue()
    receiver = source.EventGridReceiver(settings(source, changes=['removed']), queue)
    other = [{'eventType': 'Microsoft.Resources.ResourceWriteSuccess', 'data': {}}]
    run(receiver.handle('POST', {}, {'code': 's3cret'}, json.dumps(other + event_grid(resource_info())).encode()))
    assert queue.items == []
    run(receiver.handle('POST', {}, {'code': 's3cret'}, json.dumps(event_grid(resource_info('Canceled'))).encode()))
    assert [item['scheduled_event']['event_status'] for item in queue.items] == ['Canceled']


class ServingReceiver(object):
    """The source's aiohttp server on a free loopback port, in its own event loop thread."""

    def __init__(self, source, **args):
        self.queue = ListQueue()
        self.receiver = source.EventGridReceiver(settings(source, **args), self.queue)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.task = asyncio.run_coroutine_threadsafe(self.receiver.serve(), self.loop)
        deadline = time.monotonic() + 10
        while self.receiver.port is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.receiver.port, 'the source did not start listening'

    def url(self, query='?code=s3cret'):
        return 'http://127.0.0.1:%d/eventgrid%s' % (self.receiver.port, query)

    def close(self):
        self.task.cancel()
        time.sleep(0.1)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)


def wait_for(predicate, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize('schema', ['EventGridSchema', 'CloudEventSchemaV1_0'])
def test_simulator_pushes_through_the_real_server(source, schema):
    serving = ServingReceiver(source)
    simulator = Simulator({'vms': [{'name': 'vm0', 'listen': '127.0.0.1:0'}, {'name': 'vm1', 'listen': '127.0.0.1:0'}],
                           'throttle': {'enabled': False}}, '127.0.0.1:0')
    simulator.start()
    arm = ArmFacade(simulator, '127.0.0.1:0', {'eventgrid': {'webhook': serving.url(), 'schema': schema,
                                                             'poll_seconds': 0.05}})
    arm.start()
    try:
        event_id = simulator.world.create_event({'event_type': 'Reboot', 'resources': ['vm1', 'vm0'],
                                                 'not_before_seconds': 60})
        assert wait_for(lambda: len(serving.queue.items) >= 1)
        simulator.world.advance_clock(61)
        assert wait_for(lambda: len(serving.queue.items) >= 2)
        assert arm.describe()['eventgrid_validated']
    finally:
        arm.stop()
        simulator.stop()
        serving.close()
    events = [item['scheduled_event'] for item in serving.queue.items]
    # Two VMs own the event (two rows): one event per change all the same.
    assert [(event['event_id'], event['change']) for event in events[:2]] == [(event_id, 'new'),
                                                                              (event_id, 'started')]
    assert serving.queue.items[0]['meta']['hosts'] == ['vm1', 'vm0']


def test_wrong_secret_gets_401_from_the_real_server(source):
    import urllib.error
    import urllib.request
    serving = ServingReceiver(source)
    try:
        request = urllib.request.Request(serving.url('?code=wrong'), data=b'[]', method='POST')
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=5)
        assert caught.value.code == 401
    finally:
        serving.close()
