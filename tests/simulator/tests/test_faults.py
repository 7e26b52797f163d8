"""Injected faults: each kind, matching, counting and clearing."""

import http.client
import json
import socket
import struct
import threading
import time

import pytest

from conftest import SE_PATH, API
from imds_simulator.control_client import ControlError


@pytest.mark.parametrize('status', [500, 503, 429, 410, 404])
def test_status_fault_answers_that_status_for_count_requests(sim, status):
    sim.control.add_fault('status', status=status, count=2)
    assert [sim.get('vm0').status for dummy in range(3)] == [status, status, 200]
    assert sim.control.faults() == []
    log = sim.control.log()
    assert [entry['fault'] for entry in log] == ['status', 'status', None]


def test_fault_matches_vm_path_and_method(sim):
    sim.control.add_fault('status', vm='vm1', path='scheduledevents', method='POST', status=500)
    assert sim.get('vm0', method='POST', body={'StartRequests': [{'EventId': 'x'}]}).status == 400
    assert sim.get('vm1').status == 200
    assert sim.get('vm1', path='/metadata/instance/compute', api_version='2021-02-01').status == 200
    assert sim.get('vm1', method='POST', body={'StartRequests': [{'EventId': 'x'}]}).status == 500
    sim.control.add_fault('status', path='compute', status=503)
    assert sim.get('vm1').status == 200
    assert sim.get('vm0', path='/metadata/instance', api_version='2021-02-01').status == 503


def test_fault_applies_before_header_checks(sim):
    sim.control.add_fault('status', status=410)
    assert sim.get('vm0', headers={}).status == 410


def test_delay_fault_answers_normally_after_the_delay(sim):
    sim.control.add_fault('delay', delay_seconds=0.4)
    started = time.monotonic()
    response = sim.get('vm0')
    assert time.monotonic() - started >= 0.35
    assert response.status == 200 and response.json['DocumentIncarnation'] == 1
    # One fault, one request: the next is answered without it (the request
    # log says so; a time bound would say it only on an idle machine).
    assert sim.get('vm0').status == 200
    assert [record['fault'] for record in sim.control.log(vm='vm0')] == ['delay', None]


def test_clearing_the_faults_lets_a_held_request_go_on_at_once(sim):
    # A test holds a request back to put something between it and its
    # answer, then clears the faults rather than waiting the delay out.
    sim.control.add_fault('delay', delay_seconds=60)
    answers = []
    held = threading.Thread(target=lambda: answers.append(sim.get('vm0')), daemon=True)
    held.start()
    deadline = time.monotonic() + 30
    while sim.control.faults() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sim.control.faults() == [], 'the request never met the fault'
    assert held.is_alive() and answers == []
    sim.control.clear_faults()
    held.join(30)
    assert not held.is_alive(), 'the held request was not let go when the faults were cleared'
    assert answers[0].status == 200 and answers[0].json['DocumentIncarnation'] == 1
    # A delay fault added after the clear holds its request again.
    sim.control.add_fault('delay', delay_seconds=0.4)
    started = time.monotonic()
    assert sim.get('vm0').status == 200
    assert time.monotonic() - started >= 0.35


def test_a_client_that_gave_up_on_a_held_request_leaves_no_traceback(sim, capfd):
    # A module's time-out runs out while IMDS holds its answer (a delay
    # fault): the simulator's late answer then meets a closed connection,
    # which is what happens to clients, not a fault of the simulator's to
    # report with a traceback in its log.
    sim.control.add_fault('delay', delay_seconds=60)
    client = socket.create_connection(sim.address('vm0'), timeout=30)
    client.sendall(('GET %s?api-version=%s HTTP/1.1\r\nHost: 169.254.169.254\r\nMetadata: true\r\n\r\n'
                    % (SE_PATH, API)).encode('ascii'))
    deadline = time.monotonic() + 30
    while sim.control.faults() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sim.control.faults() == [], 'the request never met the fault'
    # Closed with a reset, as a client that gives up does: the held answer's write fails.
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
    client.close()
    sim.control.clear_faults()
    # The held request's thread reports any error before it ends (the simulator runs in this process).
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(
            'process_request_thread' in thread.name and thread.is_alive() for thread in threading.enumerate()):
        time.sleep(0.05)
    assert sim.get('vm0').status == 200
    written = capfd.readouterr()
    assert 'Traceback' not in written.err + written.out, written.err


def test_malformed_fault_sends_truncated_json(sim):
    sim.control.create_event('Freeze', ['vm0'])
    sim.control.add_fault('malformed')
    response = sim.get('vm0')
    assert response.status == 200
    assert int(response.headers['Content-Length']) == len(response.body)
    assert response.body.startswith(b'{"DocumentIncarnation": 2')
    with pytest.raises(ValueError):
        json.loads(response.body)
    sim.control.add_fault('malformed', path='compute')
    with pytest.raises(ValueError):
        json.loads(sim.get('vm0', path='/metadata/instance/compute', api_version='2021-02-01').body)


def test_reset_fault_closes_the_connection_with_rst(sim):
    sim.control.add_fault('reset')
    connection = http.client.HTTPConnection(*sim.address('vm0'), timeout=5)
    try:
        connection.request('GET', SE_PATH + '?api-version=' + API, headers={'Metadata': 'true'})
        with pytest.raises((ConnectionResetError, http.client.RemoteDisconnected)) as caught:
            connection.getresponse()
        assert isinstance(caught.value, ConnectionResetError)
    finally:
        connection.close()
    assert sim.get('vm0').status == 200
    assert sim.control.log()[0]['status'] == 'reset'


def test_reset_fault_gives_raw_socket_no_bytes(sim):
    sim.control.add_fault('reset')
    with socket.create_connection(sim.address('vm0'), timeout=5) as raw:
        raw.sendall(b'GET /metadata/scheduledevents?api-version=2020-07-01 HTTP/1.1\r\n'
                    b'Host: x\r\nMetadata: true\r\n\r\n')
        with pytest.raises(ConnectionResetError):
            data = raw.recv(1024)
            # Some kernels report the RST on the next read.
            assert data == b''
            raw.recv(1024)


@pytest.mark.parametrize('status', [307, 302])
def test_redirect_fault_sends_location(sim, status):
    sim.control.add_fault('redirect', status=status, location='http://169.254.169.254/elsewhere')
    response = sim.get('vm0')
    assert response.status == status
    assert response.headers['Location'] == 'http://169.254.169.254/elsewhere'
    assert sim.get('vm0').status == 200


def test_redirect_defaults_to_307(sim):
    sim.control.add_fault('redirect', location='http://127.0.0.1:1/')
    assert sim.get('vm0').status == 307


def test_faults_listed_and_cleared(sim):
    sim.control.add_fault('status', status=500, count=3)
    sim.control.add_fault('delay', delay_seconds=1, vm='vm1')
    listed = sim.control.faults()
    assert [(rule['kind'], rule['count']) for rule in listed] == [('status', 3), ('delay', 1)]
    sim.get('vm0')
    assert sim.control.faults()[0]['count'] == 2
    sim.control.clear_faults()
    assert sim.control.faults() == []
    assert sim.get('vm0').status == 200


@pytest.mark.parametrize('fault,word', [
    ({'kind': 'explode'}, 'kind'), ({'kind': 'status', 'status': 99}, 'status'),
    ({'kind': 'delay'}, 'delay_seconds'), ({'kind': 'redirect'}, 'location'),
    ({'kind': 'status', 'vm': 'nope'}, 'vm'), ({'kind': 'status', 'path': 'x'}, 'path'),
    ({'kind': 'status', 'count': 0}, 'count'), ({'kind': 'status', 'colour': 1}, 'colour')])
def test_bad_fault_requests_are_400_naming_the_field(sim, fault, word):
    with pytest.raises(ControlError) as caught:
        sim.control.call('POST', '/faults', fault)
    assert caught.value.status == 400
    assert word in caught.value.message
