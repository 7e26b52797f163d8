"""The IMDS HTTP contract: headers, versions, paths, methods, field gating, keep-alive."""

import http.client
import json

import pytest

from conftest import API, SE_PATH, call

SE_VERSIONS = ['2017-03-01', '2017-08-01', '2017-11-01', '2019-01-01', '2019-04-01', '2019-08-01', '2020-07-01']


def test_document_starts_empty_at_incarnation_one_with_json_headers(sim):
    response = sim.get('vm0')
    assert response.status == 200
    assert response.headers['Content-Type'] == 'application/json; charset=utf-8'
    assert int(response.headers['Content-Length']) == len(response.body)
    assert response.json == {'DocumentIncarnation': 1, 'Events': []}


@pytest.mark.parametrize('value', ['true', 'True', 'TRUE'])
def test_metadata_header_value_is_case_insensitive(sim, value):
    assert sim.get('vm0', headers={'Metadata': value}).status == 200


@pytest.mark.parametrize('headers', [{}, {'Metadata': 'false'}, {'Metadata': ''}])
@pytest.mark.parametrize('version', SE_VERSIONS[1:])
def test_metadata_header_required_from_2017_08_01(sim, headers, version):
    response = sim.get('vm0', headers=headers, api_version=version)
    assert response.status == 400
    assert response.json == {'error': 'Bad request. Required metadata header not specified'}


def test_metadata_header_not_enforced_for_2017_03_01_and_names_get_underscore(sim):
    sim.control.create_event('Reboot', ['vm0', 'vm1'])
    response = sim.get('vm0', headers={}, api_version='2017-03-01')
    assert response.status == 200
    assert response.json['Events'][0]['Resources'] == ['_vm0', '_vm1']
    assert sim.document('vm0', '2017-08-01')['Events'][0]['Resources'] == ['vm0', 'vm1']


def test_instance_paths_always_need_the_header(sim):
    response = sim.get('vm0', path='/metadata/instance/compute', api_version='2021-02-01', headers={})
    assert response.status == 400
    assert 'metadata header' in response.json['error']


def test_x_forwarded_for_is_rejected_naming_the_header(sim):
    response = sim.get('vm0', headers={'Metadata': 'true', 'X-Forwarded-For': '10.1.2.3'})
    assert response.status == 400
    assert 'X-Forwarded-For' in response.json['error']
    compute = sim.get('vm0', path='/metadata/instance/compute', api_version='2021-02-01',
                      headers={'Metadata': 'true', 'X-Forwarded-For': '10.1.2.3'})
    assert compute.status == 400


def test_missing_api_version_lists_newest_versions(sim):
    response = sim.get('vm0', api_version=None)
    assert response.status == 400
    assert response.json['error'].startswith('Bad request. api-version was not specified in the request')
    assert response.json['newest-versions'] == ['2020-07-01', '2019-08-01', '2019-04-01']


@pytest.mark.parametrize('version', ['{latest}', 'latest', 'junk', '2018-01-01', '2021-02-01', ''])
def test_unsupported_api_versions_are_rejected(sim, version):
    response = sim.get('vm0', query='api-version=' + version)
    assert response.status == 400
    assert 'api-version' in response.json['error']
    assert response.json['newest-versions'] == ['2020-07-01', '2019-08-01', '2019-04-01']


def test_instance_versions_accept_2017_08_01_to_newer_ones(sim):
    for version in ('2017-08-01', '2019-06-01', '2021-02-01', '2023-07-01'):
        assert sim.get('vm0', path='/metadata/instance/compute', api_version=version).status == 200
    rejected = sim.get('vm0', path='/metadata/instance/compute', api_version='2020-07-02')
    assert rejected.status == 400
    assert rejected.json['newest-versions'][0] >= '2023-07-01'


def test_unknown_path_is_404_json(sim):
    response = sim.get('vm0', path='/metadata/nothing')
    assert response.status == 404
    assert 'error' in response.json
    assert sim.get('vm0', path='/').status == 404


@pytest.mark.parametrize('method,path', [('PUT', SE_PATH), ('DELETE', SE_PATH), ('PATCH', SE_PATH),
                                         ('POST', '/metadata/instance/compute'), ('DELETE', '/metadata/instance')])
def test_wrong_method_is_405(sim, method, path):
    response = sim.get('vm0', method=method, path=path, api_version='2021-02-01' if 'instance' in path else API)
    assert response.status == 405
    assert 'error' in response.json


def test_compute_identity_per_vm(make_sim):
    config = {'vms': [
        {'name': 'myScaleSet_3', 'listen': '127.0.0.2:0', 'group': 'pg1', 'vmScaleSetName': 'myScaleSet',
         'platformUpdateDomain': 3, 'platformFaultDomain': '1'},
        {'name': 'web-1', 'listen': '127.0.0.3:0', 'group': 'pg1',
         'resourceId': '/subscriptions/x/resourceGroups/y/providers/Microsoft.Compute/virtualMachines/web-1'},
    ], 'throttle': {'enabled': False}}
    sim = make_sim(config)
    compute = sim.get('myScaleSet_3', path='/metadata/instance/compute', api_version='2021-02-01').json
    assert compute['name'] == 'myScaleSet_3'
    assert compute['vmScaleSetName'] == 'myScaleSet'
    assert compute['platformUpdateDomain'] == '3'
    assert compute['platformFaultDomain'] == '1'
    assert compute['resourceId'].endswith('/virtualMachineScaleSets/myScaleSet/virtualMachines/3')
    for key in ('location', 'vmId', 'vmSize', 'osType', 'resourceGroupName', 'subscriptionId'):
        assert isinstance(compute[key], str) and compute[key]
    other = sim.get('web-1', path='/metadata/instance', api_version='2021-02-01').json
    assert set(other) == {'compute', 'network'}
    assert other['compute']['name'] == 'web-1'
    assert other['compute']['vmScaleSetName'] == ''
    assert other['compute']['platformUpdateDomain'] == '0'
    assert other['compute']['resourceId'] == config['vms'][1]['resourceId']
    assert other['network']['interface'][0]['ipv4']['ipAddress'][0]['privateIpAddress'].startswith('10.')


def test_compute_leaf_in_text_format(sim):
    response = sim.get('vm1', path='/metadata/instance/compute/name', query='api-version=2021-02-01&format=text')
    assert response.status == 200
    assert response.body == b'vm1'
    assert sim.get('vm1', path='/metadata/instance/compute/name', api_version='2021-02-01').status == 400
    assert sim.get('vm1', path='/metadata/instance/compute/nope',
                   query='api-version=2021-02-01&format=text').status == 404


GATED_FIELDS = [('Description', '2019-04-01'), ('EventSource', '2019-08-01'), ('DurationInSeconds', '2020-07-01')]


@pytest.mark.parametrize('field,since', GATED_FIELDS)
def test_fields_appear_only_from_their_version(sim, field, since):
    sim.control.create_event('Freeze', ['vm0'], duration_seconds=5)
    for version in SE_VERSIONS:
        event = sim.document('vm0', version)['Events'][0]
        assert (field in event) == (version >= since), (field, version)
        for always in ('EventId', 'EventStatus', 'EventType', 'ResourceType', 'Resources', 'NotBefore'):
            assert always in event


def test_full_event_fields_in_current_version(sim):
    event_id = sim.control.create_event('Redeploy', ['vm1'], event_source='User', description='moving',
                                        duration_seconds=-1, not_before='2030-01-02T03:04:05Z')
    assert sim.document('vm0')['Events'] == [{
        'EventId': event_id, 'EventStatus': 'Scheduled', 'EventType': 'Redeploy', 'ResourceType': 'VirtualMachine',
        'Resources': ['vm1'], 'NotBefore': 'Wed, 02 Jan 2030 03:04:05 GMT', 'Description': 'moving',
        'EventSource': 'User', 'DurationInSeconds': -1}]


@pytest.mark.parametrize('event_type,since', [('Preempt', '2017-11-01'), ('Terminate', '2019-01-01')])
def test_event_types_hidden_before_their_version(sim, event_type, since):
    event_id = sim.control.create_event(event_type, ['vm0'])
    for version in SE_VERSIONS:
        shown = [event['EventId'] for event in sim.document('vm0', version)['Events']]
        assert shown == ([event_id] if version >= since else []), version
    # An event hidden from a version cannot be approved through it.
    older = SE_VERSIONS[SE_VERSIONS.index(since) - 1]
    assert sim.approve('vm0', event_id, api_version=older).status == 400


def test_keep_alive_serves_many_requests_on_one_connection(sim):
    connection = http.client.HTTPConnection(*sim.address('vm0'), timeout=10)
    try:
        sockets_seen = set()
        for index in range(40):
            response = call(sim.address('vm0'), connection=connection)
            assert response.status == 200
            sockets_seen.add(id(connection.sock))
            if index == 20:
                # Errors must not break the connection either.
                assert call(sim.address('vm0'), connection=connection, headers={}).status == 400
                bad = call(sim.address('vm0'), connection=connection, method='POST', body=b'{not json')
                assert bad.status == 400
        assert len(sockets_seen) == 1
    finally:
        connection.close()
    assert sim.control.vm('vm0')['request_count'] == 42


def test_chunked_approval_body_is_read(sim):
    event_id = sim.control.create_event('Freeze', ['vm0'])
    connection = http.client.HTTPConnection(*sim.address('vm0'), timeout=10)
    try:
        body = json.dumps({'StartRequests': [{'EventId': event_id}]}).encode()
        connection.request('POST', SE_PATH + '?api-version=' + API, body=iter([body[:10], body[10:]]),
                           headers={'Metadata': 'true'}, encode_chunked=True)
        response = connection.getresponse()
        assert response.status == 200
        assert response.read() == b''
        assert call(sim.address('vm0'), connection=connection).json['Events'][0]['EventStatus'] == 'Started'
    finally:
        connection.close()
