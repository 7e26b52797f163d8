# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""write_integration_vars (tests/tooling/common.sh): INTEGRATION_VARS as the extra vars ansible-test gives every target."""

import os
import subprocess

import pytest
import yaml

TOOLING = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMON_SH = os.path.join(TOOLING, 'common.sh')


def write_integration_vars(tmp_path, integration_vars=None, existing=None):
    """Run write_integration_vars on a staged copy in tmp_path; return (process, the config file's text or None)."""
    integration = tmp_path / 'stage' / 'tests' / 'integration'
    integration.mkdir(parents=True)
    config = integration / 'integration_config.yml'
    if existing is not None:
        config.write_text(existing, encoding='utf-8')
    env = {key: value for key, value in os.environ.items() if key != 'INTEGRATION_VARS'}
    if integration_vars is not None:
        env['INTEGRATION_VARS'] = integration_vars
    done = subprocess.run(['bash', '-c', 'source "$1"; write_integration_vars "$2"', 'test', COMMON_SH,
                           str(tmp_path / 'stage')], env=env, capture_output=True, text=True, timeout=30, check=False)
    return done, (config.read_text(encoding='utf-8') if config.exists() else None)


@pytest.mark.parametrize('integration_vars, expected', [
    ('role_test_older_core=true', {'role_test_older_core': True}),
    (' first=1  second=two ', {'first': 1, 'second': 'two'}),
])
def test_each_pair_becomes_a_variable(tmp_path, integration_vars, expected):
    done, text = write_integration_vars(tmp_path, integration_vars)
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(text) == expected


@pytest.mark.parametrize('integration_vars', [None, '', '   '])
def test_no_variables_write_no_file(tmp_path, integration_vars):
    done, text = write_integration_vars(tmp_path, integration_vars)
    assert done.returncode == 0, done.stderr
    assert text is None and done.stdout == ''


def test_the_collections_own_file_is_added_to(tmp_path):
    done, text = write_integration_vars(tmp_path, 'extra=yes', existing='---\nmine: 1\n')
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(text) == {'mine': 1, 'extra': True}


@pytest.mark.parametrize('pair', ['novalue', 'Upper=1', '=1', 'name=', '1st=x'])
def test_a_pair_that_is_not_name_equals_value_is_refused(tmp_path, pair):
    done, _text = write_integration_vars(tmp_path, pair)
    assert done.returncode == 1
    assert "INTEGRATION_VARS: '%s' is not name=value" % pair in done.stderr
