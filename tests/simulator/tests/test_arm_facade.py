"""The ARM facade: Resource Graph rows, paging, quota, acknowledge and Event Grid deliveries."""

import contextlib
import http.server
import json
import threading
import time

import pytest

from conftest import call, running, world_config
from imds_simulator.arm_rows import QueryError, parse_query
from imds_simulator.arm_server import ArmFacade
from imds_simulator.config import ConfigError
from imds_simulator.process import SimulatorProcess

GRAPH = '/providers/Microsoft.ResourceGraph/resources'
BASE_QUERY = 'maintenanceresources | where type =~ "microsoft.maintenance/scheduledevents"'
TOKEN = 'simulator-token'
SUB = '8d10da13-8125-4ba9-a717-bf7490507b3d'


@contextlib.contextmanager
def facade(config=None, **settings):
    with running(config or world_config()) as sim:
        arm = ArmFacade(sim.simulator, '127.0.0.1:0', settings)
        arm.start()
        try:
            yield sim, arm
        finally:
            arm.stop()


def graph(arm, query=BASE_QUERY, token=TOKEN, subscriptions=(), api_version='2022-10-01', **options):
    body = {'subscriptions': list(subscriptions), 'query': query, 'options': options}
    headers = {'Content-Type': 'application/json'}
    if token is not None:
        headers['Authorization'] = 'Bearer ' + token
    return call(arm.address, 'POST', GRAPH, query='api-version=' + api_version, headers=headers, body=body)


def ack_path(row_id):
    return row_id + '/acknowledge'


def acknowledge(arm, row_id, token=TOKEN, api_version='2023-10-01-preview'):
    headers = {} if token is None else {'Authorization': 'Bearer ' + token}
    return call(arm.address, 'POST', ack_path(row_id), query='api-version=' + api_version, headers=headers, body=b'')


def test_rows_carry_the_events_imds_shows_with_the_same_ids():
    with facade() as (sim, arm):
        event_id = sim.control.create_event('Reboot', ['vm0', 'vm1'], not_before_seconds=600)
        document = sim.document('vm0')
        answer = graph(arm)
        assert answer.status == 200, answer.body
        rows = answer.json['data']
        # Two standalone VMs own the event: one row each, same name and properties.
        assert sorted(row['id'].split('/')[8] for row in rows) == ['vm0', 'vm1']
        for row in rows:
            assert row['name'] == event_id
            assert row['type'] == 'microsoft.maintenance/scheduledevents'
            assert row['subscriptionId'] == SUB
            assert row['id'].endswith('/providers/Microsoft.Maintenance/scheduledevents/' + event_id)
            assert row['properties'] == document['Events'][0]


def test_scale_set_events_belong_to_the_scale_set():
    config = {'vms': [{'name': 'ss_%d' % index, 'listen': '127.0.0.1:0', 'vmScaleSetName': 'ss',
                       'group': 'ss-pg0'} for index in range(3)]}
    with facade(config) as (sim, arm):
        sim.control.create_event('Freeze', ['ss_0', 'ss_2'])
        rows = graph(arm).json['data']
        assert len(rows) == 1
        assert '/virtualMachineScaleSets/ss/providers/Microsoft.Maintenance/' in rows[0]['id']
        assert rows[0]['properties']['Resources'] == ['ss_0', 'ss_2']


def test_completed_and_canceled_stay_listed_for_the_retention_time():
    with facade(finished_retention_seconds=100) as (sim, arm):
        done = sim.control.create_event('Freeze', ['vm0'], not_before_seconds=10, linger_seconds=5)
        cancelled = sim.control.create_event('Reboot', ['vm1'])
        sim.control.cancel_event(cancelled)
        sim.control.advance_clock(30)
        assert sim.document('vm0')['Events'] == [] and sim.document('vm1')['Events'] == []
        statuses = {row['name']: row['properties']['EventStatus'] for row in graph(arm).json['data']}
        assert statuses == {done: 'Completed', cancelled: 'Canceled'}
        sim.control.advance_clock(200)
        assert graph(arm).json['data'] == []


def test_filters_by_resource_group_resource_name_event_id_and_subscription():
    config = world_config(3)
    config['vms'][2]['resourceGroupName'] = 'rg-other'
    config['vms'][2]['subscriptionId'] = 'other-sub'
    with facade(config) as (sim, arm):
        first = sim.control.create_event('Freeze', ['vm0'])
        sim.control.create_event('Freeze', ['vm1'])
        sim.control.create_event('Freeze', ['vm2'])
        by_group = graph(arm, BASE_QUERY + " | where resourceGroup in~ ('RG-OTHER')").json['data']
        assert [row['id'].split('/')[8] for row in by_group] == ['vm2']
        by_name = graph(arm, BASE_QUERY + " | where tostring(split(id, '/')[8]) in~ ('VM1', 'vm0')").json['data']
        assert sorted(row['id'].split('/')[8] for row in by_name) == ['vm0', 'vm1']
        by_id = graph(arm, BASE_QUERY + " | where tostring(properties.EventId) in~ ('%s')" % first.lower())
        assert [row['name'] for row in by_id.json['data']] == [first]
        by_sub = graph(arm, subscriptions=['other-sub']).json['data']
        assert [row['id'].split('/')[8] for row in by_sub] == ['vm2']
        projected = graph(arm, BASE_QUERY + ' | project id, properties | order by id asc').json['data']
        assert all(set(row) == {'id', 'properties'} for row in projected)


@pytest.mark.parametrize('query, words', [
    ('Resources | where type =~ "microsoft.compute/virtualmachines"', 'only has the table maintenanceresources'),
    ('maintenanceresources | project id', 'second stage must be'),
    (BASE_QUERY + ' | summarize count()', 'does not answer the stage'),
    (BASE_QUERY + ' | project id, secrets', 'unknown column'),
    ('', 'non-empty'),
])
def test_other_query_shapes_are_refused_with_what_is_accepted(query, words):
    with pytest.raises(QueryError, match=words):
        parse_query(query)
    with facade() as (dummy, arm):
        answer = graph(arm, query)
        assert answer.status == 400
        assert answer.json['error']['code'] == 'BadRequest'
        assert words in answer.json['error']['message']


def test_paging_with_skip_token_returns_every_row_once():
    with facade(world_config(7)) as (sim, arm):
        for index in range(7):
            sim.control.create_event('Freeze', ['vm%d' % index])
        seen, token, pages = [], None, 0
        while pages < 10:
            options = {'$top': 3}
            if token:
                options['$skipToken'] = token
            page = graph(arm, **options).json
            pages += 1
            assert page['totalRecords'] == 7
            seen += [row['id'] for row in page['data']]
            token = page.get('$skipToken')
            if not token:
                break
        assert pages == 3
        assert len(seen) == 7 and len(set(seen)) == 7
        bad = graph(arm, **{'$skipToken': 'not-a-token'})
        assert bad.status == 400 and 'skipToken' in bad.json['error']['message']


def test_quota_headers_then_429_with_retry_after():
    with facade(quota={'requests': 2, 'window_seconds': 60}) as (dummy, arm):
        first = graph(arm)
        assert first.headers['x-ms-user-quota-remaining'] == '1'
        assert graph(arm).headers['x-ms-user-quota-remaining'] == '0'
        third = graph(arm)
        assert third.status == 429
        assert 1 <= int(third.headers['Retry-After']) <= 60
        assert third.json['error']['code'] == 'RateLimiting'


def test_forced_throttling_answers_429_for_the_next_requests_only():
    with facade(quota=None, throttle_next=1, retry_after_seconds=3) as (dummy, arm):
        throttled = graph(arm)
        assert throttled.status == 429 and throttled.headers['Retry-After'] == '3'
        assert graph(arm).status == 200


def test_authentication_and_role():
    with facade(tokens={'good': ['ScheduledEventContributor'], 'reader': ['Reader']}) as (sim, arm):
        sim.control.create_event('Freeze', ['vm0'])
        assert graph(arm, token=None).status == 401
        assert graph(arm, token='forged').status == 401
        # Resource Graph shows only what the caller may read.
        assert graph(arm, token='reader').json['data'] == []
        row_id = graph(arm, token='good').json['data'][0]['id']
        assert acknowledge(arm, row_id, token=None).status == 401
        denied = acknowledge(arm, row_id, token='reader')
        assert denied.status == 403 and 'ScheduledEventContributor' in denied.json['error']['message']
        assert sim.world.state()['events'][0]['approvals'] == []


def test_acknowledge_approves_as_imds_would_and_unknown_ids_are_404():
    with facade() as (sim, arm):
        event_id = sim.control.create_event('Reboot', ['vm0', 'vm1'], not_before_seconds=900)
        rows = graph(arm).json['data']
        row_id = [row['id'] for row in rows if row['id'].split('/')[8] == 'vm1'][0]
        assert acknowledge(arm, row_id, api_version='2020-01-01').status == 400
        missing = acknowledge(arm, row_id.replace(event_id, '00000000-0000-0000-0000-000000000000'))
        assert missing.status == 404
        answer = acknowledge(arm, row_id)
        assert answer.status == 200, answer.body
        assert answer.json == {'value': 'Acknowledged'}
        state = sim.world.state()['events'][0]
        assert state['status'] == 'Started'
        assert [approval['vm'] for approval in state['approvals']] == ['vm1']
        assert sim.document('vm0')['Events'][0]['EventStatus'] == 'Started'
        assert [row['properties']['EventStatus'] for row in graph(arm).json['data']] == ['Started', 'Started']
        # Started: acknowledging again is harmless, as an IMDS POST would be.
        assert acknowledge(arm, row_id).status == 200


def acknowledge_list(arm, owner, event_ids, token=TOKEN, api_version='2025-10-01-preview'):
    headers = {'Content-Type': 'application/json', 'Authorization': 'Bearer ' + token}
    return call(arm.address, 'POST', owner + '/providers/Microsoft.Maintenance/scheduledevents',
                query='api-version=' + api_version, headers=headers, body={'value': list(event_ids)})


def test_the_list_form_acknowledges_several_events_of_one_resource_or_none():
    with facade(tokens={TOKEN: ['ScheduledEventContributor'], 'reader': ['Reader']}) as (sim, arm):
        first = sim.control.create_event('Freeze', ['vm0'], not_before_seconds=900)
        second = sim.control.create_event('Reboot', ['vm0', 'vm1'], not_before_seconds=900)
        owner = graph(arm).json['data'][0]['id'].split('/providers/Microsoft.Maintenance/')[0]
        assert acknowledge_list(arm, owner, [first], token='reader').status == 403
        assert acknowledge_list(arm, owner, [first], api_version='2023-10-01-preview').status == 400
        assert acknowledge_list(arm, owner, []).status == 400
        # One unknown id: nothing is acknowledged.
        unknown = acknowledge_list(arm, owner, [first, '00000000-0000-0000-0000-000000000000'])
        assert unknown.status == 404
        assert {event['status'] for event in sim.world.state()['events']} == {'Scheduled'}
        answer = acknowledge_list(arm, owner, [first, second])
        assert answer.status == 200, answer.body
        assert {event['status'] for event in sim.world.state()['events']} == {'Started'}
        logged = [(entry['form'], entry['status']) for entry in arm.acknowledge_log.since(0)]
        assert logged == [('list', 404), ('list', 404), ('list', 200), ('list', 200)]


def test_acknowledge_of_a_finished_event_is_a_conflict():
    with facade() as (sim, arm):
        event_id = sim.control.create_event('Reboot', ['vm0'])
        sim.control.cancel_event(event_id)
        row_id = graph(arm).json['data'][0]['id']
        answer = acknowledge(arm, row_id)
        assert answer.status == 409 and 'Canceled' in answer.json['error']['message']


def test_settings_are_checked():
    with pytest.raises(ConfigError, match='unknown field'):
        ArmFacade(None, '127.0.0.1:0', {'tokenz': {}})
    with pytest.raises(ConfigError, match='schema'):
        ArmFacade(None, '127.0.0.1:0', {'eventgrid': {'webhook': 'http://127.0.0.1:1/', 'schema': 'x'}})
    with facade() as (dummy, arm):
        answer = call(arm.address, 'PUT', '/_simulator/arm', api_version=None, headers={},
                      body={'page_size': 0})
        assert answer.status == 400 and 'page_size' in answer.json['error']['message']


class _Webhook:
    """A loopback webhook recording what it receives; answers the handshakes when told to."""

    def __init__(self, answer_validation=True):
        self.received = []
        self.answer_validation = answer_validation
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_OPTIONS(self):
                owner.received.append(('OPTIONS', {k.lower(): v for k, v in self.headers.items()}, None))
                self.send_response(200 if owner.answer_validation else 403)
                if owner.answer_validation:
                    self.send_header('WebHook-Allowed-Origin', self.headers.get('WebHook-Request-Origin', ''))
                self.send_header('Content-Length', '0')
                self.end_headers()

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
                owner.received.append(('POST', {k.lower(): v for k, v in self.headers.items()}, body))
                answer = b''
                if isinstance(body, list) and body[0]['eventType'].endswith('SubscriptionValidationEvent'):
                    if not owner.answer_validation:
                        self.send_response(403)
                        self.send_header('Content-Length', '0')
                        self.end_headers()
                        return
                    answer = json.dumps({'validationResponse': body[0]['data']['validationCode']}).encode()
                self.send_response(200)
                self.send_header('Content-Length', str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = 'http://127.0.0.1:%d/hook?code=s3cret' % self.server.server_address[1]

    def notifications(self):
        return [body for method, headers, body in self.received
                if method == 'POST' and headers.get('aeg-event-type') == 'Notification']

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def wait_for(predicate, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize('schema', ['EventGridSchema', 'CloudEventSchemaV1_0'])
def test_event_grid_validates_then_delivers_every_status_change(schema):
    hook = _Webhook()
    try:
        settings = {'eventgrid': {'webhook': hook.url, 'schema': schema, 'poll_seconds': 0.05}}
        with facade(**settings) as (sim, arm):
            event_id = sim.control.create_event('Freeze', ['vm0'], not_before_seconds=60, linger_seconds=5)
            assert wait_for(lambda: len(hook.notifications()) >= 1)
            sim.control.advance_clock(61)
            assert wait_for(lambda: len(hook.notifications()) >= 2)
            sim.control.advance_clock(10)
            assert wait_for(lambda: len(hook.notifications()) >= 3)
        first = hook.received[0]
        if schema == 'EventGridSchema':
            assert first[2][0]['eventType'] == 'Microsoft.EventGrid.SubscriptionValidationEvent'
            events = [body[0] for body in hook.notifications()]
            assert all(event['eventType'].endswith('ScheduledEventEmitted') for event in events)
        else:
            assert first[0] == 'OPTIONS' and first[1]['webhook-request-origin'] == 'eventgrid.azure.net'
            events = hook.notifications()
            assert all(event['specversion'] == '1.0' for event in events)
        statuses = [event['data']['resourceInfo']['properties']['EventStatus'] for event in events]
        assert statuses[:3] == ['Scheduled', 'Started', 'Completed']
        assert all(event['data']['resourceInfo']['name'] == event_id for event in events)
        assert events[0]['subject'].endswith('/virtualMachines/vm0')
    finally:
        hook.close()


def test_event_grid_delivers_nothing_before_the_handshake_passes():
    hook = _Webhook(answer_validation=False)
    try:
        with facade(eventgrid={'webhook': hook.url, 'poll_seconds': 0.05}) as (sim, arm):
            sim.control.create_event('Freeze', ['vm0'])
            assert wait_for(lambda: len(hook.received) >= 3)
            assert hook.notifications() == []
            assert arm.describe()['eventgrid_validated'] is False
    finally:
        hook.close()


def test_command_line_serves_the_facade_on_a_kernel_chosen_port(tmp_path):
    settings = tmp_path / 'arm.json'
    settings.write_text(json.dumps({'tokens': {'cli-token': ['ScheduledEventContributor']}}))
    config = {'vms': [{'name': 'cli_0', 'listen': '127.0.0.1:0'}]}
    with SimulatorProcess(tmp_path / 'sim', config=config,
                          extra_args=['--arm', '127.0.0.1:0', '--arm-settings', str(settings)]) as sim:
        sim.control.create_event('Freeze', ['cli_0'])
        host, port = sim.ready['arm'].rsplit(':', 1)
        assert int(port) > 0 and sim.arm_url == 'http://' + sim.ready['arm']
        answer = call((host, int(port)), 'POST', GRAPH, query='api-version=2022-10-01',
                      headers={'Authorization': 'Bearer cli-token'}, body={'query': BASE_QUERY})
        assert answer.status == 200 and answer.json['count'] == 1
