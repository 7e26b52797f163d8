"""Tests for hold_ports.py, which keeps the simulator's default ports busy while the integration targets run."""

import socket

import pytest

import hold_ports


@pytest.fixture(name='taken_port')
def fixture_taken_port():
    # A port this test holds itself, so "already taken" needs no luck.
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(('127.0.0.1', 0))
    listener.listen(1)
    yield listener.getsockname()[1]
    listener.close()


def test_a_port_someone_else_holds_is_reported_and_left_alone(taken_port):
    held, taken = hold_ports.hold([taken_port])
    assert held == [] and taken == [taken_port]


def test_the_ports_held_are_listening_until_released():
    held, taken = hold_ports.hold([0])
    try:
        assert taken == [] and len(held) == 1
        port = held[0].getsockname()[1]
        # Something else cannot listen there meanwhile.
        _again, taken_again = hold_ports.hold([port])
        assert taken_again == [port]
    finally:
        for sock in held:
            sock.close()


def test_the_simulator_defaults_are_its_control_and_default_world_ports(tmp_path, taken_port):
    ready = tmp_path / 'ready'
    assert hold_ports.main(['--ready', str(ready), '--max-seconds', '0', '--simulator-defaults', str(taken_port)]) == 0
    text = ready.read_text()
    for port in (18079, 18101, 18102):
        assert str(port) in text
    assert 'already taken [%d' % taken_port in text
