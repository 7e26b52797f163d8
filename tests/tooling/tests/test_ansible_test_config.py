# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ansible settings the tests' ansible runs share (tests/integration/integration.cfg) are what ansible reads
in the environment each harness gives its runs."""

import os
import subprocess
import sys

import pytest

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(TESTS_DIR, 'integration', 'integration.cfg')
for suite in ('rolling', 'fleet', 'eda'):
    if os.path.join(TESTS_DIR, suite) not in sys.path:
        sys.path.insert(0, os.path.join(TESTS_DIR, suite))

import eda_harness  # noqa: E402 pylint: disable=wrong-import-position
import fleet_harness  # noqa: E402 pylint: disable=wrong-import-position
import rolling_harness  # noqa: E402 pylint: disable=wrong-import-position


def changed_settings(env):
    """ansible-config's settings that differ from ansible-core's defaults, run with ``env``."""
    command = [os.path.join(os.path.dirname(sys.executable), 'ansible-config'), 'dump', '--only-changed']
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


def rolling_env(tmp_path):
    world = rolling_harness.RollingWorld.__new__(rolling_harness.RollingWorld)
    world.workdir, world.forks = str(tmp_path), 5
    return world.ansible_env()


def fleet_env(tmp_path):
    world = fleet_harness.FleetWorld.__new__(fleet_harness.FleetWorld)
    world.work_dir, world.collections = str(tmp_path), str(tmp_path)
    return world.ansible_env()


def rulebook_env(tmp_path):
    return eda_harness.Rulebook(str(tmp_path), 'rulebook.yml', str(tmp_path), {'all': {}}, {}).env


@pytest.mark.parametrize('harness_env', [rolling_env, fleet_env, rulebook_env])
def test_each_harness_runs_ansible_with_the_shared_settings(tmp_path, harness_env):
    env = harness_env(tmp_path)
    assert env['ANSIBLE_CONFIG'] == CONFIG
    # Read by ansible itself: the file parses, and the setting is one ansible knows.
    assert 'DEFAULT_INTERNAL_POLL_INTERVAL(%s) = 0.005' % CONFIG in changed_settings(env)
