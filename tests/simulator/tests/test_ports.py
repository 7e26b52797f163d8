"""unused_port: a port for a program that cannot bind port 0 itself, away from the ports the kernel hands out."""

import socket

import pytest

from imds_simulator.process import EPHEMERAL_RANGE_FILE, ports_below_ephemeral_range, unused_port


@pytest.mark.parametrize('range_text, expected', [
    ('32768\t60999\n', range(16384, 32768)),
    ('49152 65535', range(24576, 49152)),
    # No room between the privileged ports and the range: the kernel picks.
    ('1024 65535', range(0)),
    ('2000 65535', range(1024, 2000)),
    ('', range(0)),
    ('32768', range(0)),
    ('high low', range(0)),
    ('60999 32768', range(0)),
    ('0 60999', range(0)),
])
def test_the_ports_picked_from_are_below_the_ephemeral_range(range_text, expected):
    assert ports_below_ephemeral_range(range_text) == expected


def write_range(tmp_path, text):
    path = tmp_path / 'ip_local_port_range'
    path.write_text(text)
    return str(path)


def test_a_port_is_free_and_below_this_machines_ephemeral_range():
    with open(EPHEMERAL_RANGE_FILE, encoding='ascii') as handle:
        candidates = ports_below_ephemeral_range(handle.read())
    port = unused_port()
    assert port in candidates
    with socket.socket() as listener:
        listener.bind(('127.0.0.1', port))


class ScriptedChoice:
    """Stands in for ``random.SystemRandom``: the ports to try, in order."""

    def __init__(self, ports):
        self.ports = list(ports)

    def choice(self, candidates):
        return self.ports.pop(0) if self.ports else candidates[0]


def test_a_held_port_is_passed_over(tmp_path):
    with socket.socket() as free:
        free.bind(('127.0.0.1', 0))
        free_port = free.getsockname()[1]
    with socket.socket() as holder:
        holder.bind(('127.0.0.1', 0))
        holder.listen(1)
        held = holder.getsockname()[1]
        port = unused_port(range_file=write_range(tmp_path, '32768 60999'),
                           rng=ScriptedChoice([held, held, free_port]))
    assert port == free_port


def test_without_room_below_the_range_the_kernel_picks(tmp_path):
    port = unused_port(range_file=write_range(tmp_path, '1024 65535'))
    with socket.socket() as listener:
        listener.bind(('127.0.0.1', port))


def test_without_the_range_file_the_kernel_picks(tmp_path):
    port = unused_port(range_file=str(tmp_path / 'missing'))
    assert 1 <= port <= 65535
