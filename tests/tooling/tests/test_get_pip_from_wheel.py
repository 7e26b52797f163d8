"""Tests for the get-pip replacement that ansible-test runs from its cache."""

import glob
import os
import shutil
import subprocess
import sys

import pytest

import get_pip_from_wheel
import seed_ansible_test_pip

# What ansible-test 2.19 passes to get-pip (see requirements.py bootstrap()).
ANSIBLE_TEST_ARGUMENTS = ['--disable-pip-version-check', 'pip==24.2', '--no-setuptools', '--no-wheel']


def test_ansible_test_arguments_install_only_pip():
    assert get_pip_from_wheel.pip_install_arguments(ANSIBLE_TEST_ARGUMENTS) == [
        'install', '--upgrade', '--force-reinstall', '--disable-pip-version-check', 'pip==24.2']


def test_setuptools_and_wheel_are_added_like_get_pip_without_opt_out_flags():
    assert get_pip_from_wheel.pip_install_arguments(['pip==24.2'])[-2:] == ['setuptools', 'wheel']


def test_explicit_setuptools_requirement_is_not_doubled():
    arguments = get_pip_from_wheel.pip_install_arguments(['pip==24.2', 'setuptools==70.0', '--no-wheel'])

    assert arguments.count('setuptools') == 0
    assert 'setuptools==70.0' in arguments
    assert 'wheel' not in arguments


def test_pip_version_comes_from_the_cache_file_name():
    assert get_pip_from_wheel.pip_version_from_file_name('/cache/get_pip_24_2.py') == '24.2'
    assert get_pip_from_wheel.pip_version_from_file_name('get_pip_23_3_1.py') == '23.3.1'


def test_unexpected_file_name_is_rejected_with_advice():
    with pytest.raises(SystemExit, match='seed_ansible_test_pip.py'):
        get_pip_from_wheel.pip_version_from_file_name('/cache/bootstrap.py')


def test_missing_wheel_is_reported_with_advice(tmp_path):
    with pytest.raises(SystemExit, match='make bootstrap'):
        get_pip_from_wheel.find_pip_wheel(str(tmp_path), '24.2')


def test_seeded_script_is_what_ansible_test_looks_for():
    pip_version = seed_ansible_test_pip.pinned_pip_version(f'{sys.version_info.major}.{sys.version_info.minor}')
    expected = os.path.expanduser(f"~/.ansible/test/cache/get_pip_{pip_version.replace('.', '_')}.py")

    assert seed_ansible_test_pip.cache_script_path(pip_version) == expected
    seed_ansible_test_pip.check_ansible_test_uses_cache()


def private_cache(tmp_path):
    """(pip version, folder, script): the replacement and the pip wheel that make bootstrap seeded, copied into tmp_path."""
    pip_version = seed_ansible_test_pip.pinned_pip_version(f'{sys.version_info.major}.{sys.version_info.minor}')
    cache_dir = os.path.dirname(seed_ansible_test_pip.cache_script_path(pip_version))
    wheels = glob.glob(os.path.join(cache_dir, f'pip-{pip_version}-*.whl'))

    if not wheels:
        pytest.skip(f'no pip {pip_version} wheel in {cache_dir}: run make bootstrap')

    cache_copy = tmp_path / 'cache'
    cache_copy.mkdir()
    shutil.copy(wheels[0], cache_copy)
    script = cache_copy / f"get_pip_{pip_version.replace('.', '_')}.py"
    shutil.copy(get_pip_from_wheel.__file__, script)
    return pip_version, cache_copy, script


def test_replacement_installs_pip_into_an_empty_venv_without_network(tmp_path):
    pip_version, cache_copy, script = private_cache(tmp_path)
    venv = tmp_path / 'venv'
    # The same kind of environment ansible-test makes: no pip in it.
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(venv)], check=True, timeout=120)
    venv_python = str(venv / 'bin' / 'python')

    subprocess.run([venv_python, str(script), '--no-index', '--find-links', str(cache_copy)] + ANSIBLE_TEST_ARGUMENTS[:1]
                   + [f'pip=={pip_version}'] + ANSIBLE_TEST_ARGUMENTS[2:], check=True, timeout=300)
    installed = subprocess.run([venv_python, '-m', 'pip', '--version'], capture_output=True, text=True, check=True, timeout=60)

    assert installed.stdout.startswith(f'pip {pip_version} ')


@pytest.mark.parametrize('arguments, alone', [
    (ANSIBLE_TEST_ARGUMENTS, True),
    (['pip==24.2', '--no-setuptools', '--no-wheel', '--quiet'], True),
    (['pip==24.2', '--no-wheel'], False),  # setuptools too
    (['pip==24.2', 'pyyaml', '--no-setuptools', '--no-wheel'], False),
    (['pip==23.1.2', '--no-setuptools', '--no-wheel'], False),  # not the version of the stored wheel
    (['--no-index', '--find-links', '/wheels', 'pip==24.2', '--no-setuptools', '--no-wheel'], False),
])
def test_only_pip_alone_is_copied(arguments, alone):
    assert get_pip_from_wheel.asks_for_pip_alone(arguments, '24.2') is alone


def run_python(python, *arguments):
    return subprocess.run([python] + list(arguments), capture_output=True, text=True, check=True, timeout=120).stdout


def test_pip_is_installed_once_per_python_and_copied_into_every_venv_after(tmp_path):
    pip_version, cache_copy, script = private_cache(tmp_path)
    arguments = ['--disable-pip-version-check', f'pip=={pip_version}', '--no-setuptools', '--no-wheel']
    kept = cache_copy / f'pip-{pip_version}-{sys.implementation.cache_tag}'

    venvs = []
    for name in ('first', 'second'):
        venv = tmp_path / name
        subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(venv)], check=True, timeout=120)
        # Offline: the environment pip would read its indexes from is not consulted on either path.
        env = dict(os.environ, PIP_NO_INDEX='1')
        subprocess.run([str(venv / 'bin' / 'python'), str(script)] + arguments, check=True, timeout=300, env=env)
        venvs.append(venv)
        assert kept.is_dir()

    for venv in venvs:
        python = str(venv / 'bin' / 'python')
        site_packages = run_python(python, '-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])').strip()
        assert run_python(python, '-m', 'pip', '--version').startswith(f'pip {pip_version} from {site_packages}/pip ')
        assert run_python(str(venv / 'bin' / 'pip'), '--version').startswith(f'pip {pip_version} ')
        assert not glob.glob(os.path.join(site_packages, 'pip-*.dist-info', 'direct_url.json'))
        # The compiled files came along unchanged, with the times that keep them valid.
        compiled = os.path.join('pip', '__pycache__', f'__init__.{sys.implementation.cache_tag}.pyc')
        with open(os.path.join(site_packages, compiled), 'rb') as copied, open(kept / compiled, 'rb') as original:
            assert copied.read() == original.read()
        # RECORD names every file where it is: pip removes itself and its scripts completely.
        run_python(python, '-m', 'pip', 'uninstall', '--yes', 'pip')
        assert not glob.glob(os.path.join(site_packages, 'pip*'))
        assert not glob.glob(str(venv / 'bin' / 'pip*'))
