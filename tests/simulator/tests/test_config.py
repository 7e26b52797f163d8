"""Configuration checks name the bad field; example scenario files load."""

import glob
import json
import os

import pytest

from conftest import SIMULATOR_DIR
from imds_simulator.config import ConfigError, load_config_file, validate_config

GOOD_VM = {'name': 'vm0', 'listen': '127.0.0.1:18101'}


@pytest.mark.parametrize('config,field', [
    ([], 'JSON object'),
    ({}, 'vms'),
    ({'vms': []}, 'vms'),
    ({'vms': [GOOD_VM], 'colour': 'red'}, 'colour'),
    ({'vms': ['vm0']}, 'vms[0]'),
    ({'vms': [{'listen': '127.0.0.1:1'}]}, 'vms[0].name'),
    ({'vms': [{'name': 'a'}]}, 'vms[0].listen'),
    ({'vms': [{'name': 'a', 'listen': '192.168.1.1:80'}]}, 'vms[0].listen'),
    ({'vms': [{'name': 'a', 'listen': 'localhost:80'}]}, 'vms[0].listen'),
    ({'vms': [{'name': 'a', 'listen': '127.0.0.1:70000'}]}, 'vms[0].listen'),
    ({'vms': [GOOD_VM, dict(GOOD_VM, listen='127.0.0.1:2')]}, 'vms[1].name'),
    ({'vms': [GOOD_VM, dict(GOOD_VM, name='b')]}, 'vms[1].listen'),
    ({'vms': [dict(GOOD_VM, platformUpdateDomain='one')]}, 'vms[0].platformUpdateDomain'),
    ({'vms': [dict(GOOD_VM, own_events_only='yes')]}, 'vms[0].own_events_only'),
    ({'vms': [dict(GOOD_VM, vmScaleSetName=3)]}, 'vms[0].vmScaleSetName'),
    ({'vms': [dict(GOOD_VM, hostname='x')]}, 'hostname'),
    ({'vms': [GOOD_VM], 'throttle': {'per_second': 0}}, 'throttle.per_second'),
    ({'vms': [GOOD_VM], 'throttle': {'enabled': 'no'}}, 'throttle.enabled'),
    ({'vms': [GOOD_VM], 'first_call_delay_seconds': -1}, 'first_call_delay_seconds'),
    ({'vms': [GOOD_VM], 'speed': 0}, 'speed'),
    ({'vms': [GOOD_VM], 'clock_start': 'yesterday'}, 'clock_start'),
    ({'vms': [GOOD_VM], 'impact_command': 'touch /tmp/x'}, 'impact_command'),
    ({'vms': [GOOD_VM], 'default_linger_seconds': 'long'}, 'default_linger_seconds'),
    ({'vms': [GOOD_VM], 'scenario': 'westno'}, 'scenario'),
])
def test_bad_config_names_the_field(config, field):
    with pytest.raises(ConfigError) as caught:
        validate_config(config)
    assert field in str(caught.value)


def test_defaults_are_filled_in():
    checked = validate_config({'vms': [GOOD_VM]})
    vm = checked['vms'][0]
    assert vm['group'] and vm['vmScaleSetName'] == '' and vm['platformUpdateDomain'] == '0'
    assert vm['own_events_only'] is False and vm['resourceId'].endswith('/virtualMachines/vm0')
    assert checked['throttle'] == {'enabled': True, 'per_second': 5}
    assert checked['first_call_delay_seconds'] == 0 and checked['speed'] == 1.0
    assert checked['default_linger_seconds'] == 600 and checked['impact_command'] is None


def test_config_file_errors_name_the_file(tmp_path):
    missing = tmp_path / 'missing.json'
    with pytest.raises(ConfigError) as caught:
        load_config_file(str(missing))
    assert 'missing.json' in str(caught.value)
    broken = tmp_path / 'broken.json'
    broken.write_text('{"vms": [')
    with pytest.raises(ConfigError) as caught:
        load_config_file(str(broken))
    assert 'not valid JSON' in str(caught.value)


@pytest.mark.parametrize('path', sorted(glob.glob(os.path.join(SIMULATOR_DIR, 'scenarios', '*.json'))))
def test_example_scenario_files_are_valid(path, make_sim):
    config = load_config_file(path)
    with open(path, encoding='utf-8') as handle:
        assert json.load(handle)['vms']
    # Move the example onto ports the kernel chooses so the test never
    # collides with another simulator.
    for vm in config['vms']:
        vm['listen'] = vm['listen'].rpartition(':')[0] + ':0'
    config['first_call_delay_seconds'] = 0
    sim = make_sim(config)
    assert sim.control.health() == {'ok': True}


def test_example_files_exist():
    assert len(glob.glob(os.path.join(SIMULATOR_DIR, 'scenarios', '*.json'))) >= 3
