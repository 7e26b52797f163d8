# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The e2e tests need haproxy (Debian package) and ansible-playbook in the venv."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from stage.haproxy import haproxy_binary  # noqa: E402 pylint: disable=wrong-import-position


@pytest.fixture(scope='session')
def require_haproxy():
    if haproxy_binary() is None:
        if os.environ.get('CI'):
            pytest.fail('haproxy is not installed; tests/tooling/debian-packages.txt must list it')
        pytest.skip('haproxy is not installed (apt-get install haproxy)')
