# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The e2e stage's HAProxy takes a server out of its pool for maintenance, never for a slow machine.

The run with draining must fail no request because of maintenance. When
HAProxy gave its health checks less time than its requests (300 ms against
1 s), two `make test` runs at once slowed the backends enough that the two
api servers left in service failed their checks while the other two were
drained, and HAProxy answered 503 with no server left: a failure of the
machine, counted as one of maintenance.
"""

import re

import pytest

from stage.haproxy import HAProxy

DURATION = re.compile(r'^(\d+)(us|ms|s|m)?$')
MILLISECONDS = {'us': 0.001, 'ms': 1, 's': 1000, 'm': 60000, None: 1}  # HAProxy's unit is ms when none is given


def milliseconds(text):
    match = DURATION.match(text)
    assert match, 'not an HAProxy duration: %r' % text
    return int(match.group(1)) * MILLISECONDS[match.group(2)]


def timeouts(config):
    """``{'check': ms, 'server': ms, ...}`` from the ``timeout`` lines of an HAProxy configuration."""
    found = {}
    for line in config.splitlines():
        words = line.split()
        if len(words) == 3 and words[0] == 'timeout':
            found[words[1]] = milliseconds(words[2])
    return found


@pytest.mark.parametrize('text, expected', [('300ms', 300), ('1s', 1000), ('250', 250), ('2m', 120000)])
def test_durations_are_read_in_their_unit(text, expected):
    assert milliseconds(text) == expected


def test_a_health_check_has_as_long_as_a_request_to_be_answered(tmp_path):
    haproxy = HAProxy(str(tmp_path), '127.0.0.1', {'api': [('api0', '127.0.0.1', 1), ('api1', '127.0.0.1', 2)]},
                      [('/api', 'api')])
    try:
        config = timeouts(haproxy.config_text())
    finally:
        haproxy.stop()
    # A server whose answers come late but within the request time-out
    # still serves; the checker must not take it out of the pool first.
    assert config['check'] >= config['server'], config
