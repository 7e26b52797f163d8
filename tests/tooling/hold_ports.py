#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Hold loopback ports while a test stage runs, so that nothing in it can rely on them.

The IMDS simulator's default world listens on fixed ports (control 18079, VMs
18101 and 18102), convenient by hand and wrong in a test: another run on the
same machine may hold them. run-integration.sh holds them while the targets
run, so a target that starts the simulator without its own world fails every
time, not only when two runs meet. A port that is already taken is left
alone: whoever holds it proves the same.

    hold_ports.py --ready FILE [--max-seconds N] [--simulator-defaults] [PORT...]

It writes FILE once listening, and runs until SIGTERM, until the process that
started it has gone, or for --max-seconds at most.
"""

from __future__ import absolute_import, division, print_function

import argparse
import errno
import os
import signal
import socket
import sys
import time

SIMULATOR_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'simulator')


def hold(ports, address='127.0.0.1'):
    """Listening sockets on the ``ports`` that were free; returns (sockets, ports taken by others)."""
    held, taken = [], []
    for port in ports:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.bind((address, port))
            listener.listen(1)
        except OSError as exc:
            listener.close()
            if exc.errno != errno.EADDRINUSE:
                raise
            taken.append(port)
            continue
        held.append(listener)
    return held, taken


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--ready', required=True, help='file written once the ports are held')
    parser.add_argument('--max-seconds', type=float, default=3 * 3600)
    parser.add_argument('--simulator-defaults', action='store_true',
                        help="also the ports of the simulator's default world and control API")
    parser.add_argument('ports', nargs='*', type=int)
    args = parser.parse_args(argv)
    ports = list(args.ports)
    if args.simulator_defaults:
        sys.path.insert(0, SIMULATOR_DIR)
        from imds_simulator.cli import default_ports  # pylint: disable=import-outside-toplevel
        ports.extend(default_ports())
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    parent = os.getppid()
    held, taken = hold(ports)
    with open(args.ready, 'w', encoding='utf-8') as handle:
        handle.write('held %s; already taken %s\n' % ([sock.getsockname()[1] for sock in held], taken))
    deadline = time.monotonic() + args.max_seconds
    try:
        while time.monotonic() < deadline and os.getppid() == parent:
            time.sleep(1)
    finally:
        for sock in held:
            sock.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
