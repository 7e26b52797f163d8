"""Let ansible-test bootstrap pip into its virtual environments with PyPI as the only reachable host.

Why this exists: every virtual environment ansible-test 2.19 creates (one per
sanity test such as pylint, yamllint, import, validate-modules; ``--venv``;
``--requirements``) is made ``--without-pip`` and then gets pip from a get-pip
script downloaded from ansible-test's own CI file host. Only PyPI is reachable
on this project's machines, so that download fails. There is no option or
environment variable for that URL, but ansible-test looks in its cache first
(``~/.ansible/test/cache/get_pip_<version>.py``, see
ansible_test/_util/target/setup/requirements.py). This script fills that cache
with tests/tooling/get_pip_from_wheel.py and the pip wheel of the exact
version ansible-test pins, downloaded from PyPI with pip. Nothing inside
site-packages is changed; the requirements in the sanity virtual environments
are then installed by pip from PyPI as usual.

A get-pip script already in the cache that this project did not write is left
alone. Run with the controller virtual environment's Python:
``.venv/bin/python tests/tooling/seed_ansible_test_pip.py``.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

from ansible_test._internal.host_configs import NativePythonConfig
from ansible_test._internal.python_requirements import get_venv_packages
from ansible_test._internal.util import ANSIBLE_TEST_TARGET_ROOT

REPLACEMENT_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'get_pip_from_wheel.py')
REPLACEMENT_MARKER = 'azure_maintenance.scheduled_events: get-pip replacement'

# The cache lookup this script relies on; checked so an ansible-core upgrade
# that changes it fails here with a clear message instead of as a download error.
ANSIBLE_TEST_CACHE_PATTERN = "~/.ansible/test/cache/get_pip_%s.py"
ANSIBLE_TEST_BOOTSTRAP_SOURCE = os.path.join(ANSIBLE_TEST_TARGET_ROOT, 'setup', 'requirements.py')


def cache_script_path(pip_version: str) -> str:
    """Return where ansible-test looks for the cached get-pip script of pip_version."""
    return os.path.expanduser(ANSIBLE_TEST_CACHE_PATTERN % pip_version.replace('.', '_'))


def check_ansible_test_uses_cache() -> None:
    """Fail with advice when the installed ansible-test no longer reads the get-pip cache this script fills."""
    with open(ANSIBLE_TEST_BOOTSTRAP_SOURCE, encoding='utf-8') as source:
        if ANSIBLE_TEST_CACHE_PATTERN not in source.read():
            raise SystemExit(f'{ANSIBLE_TEST_BOOTSTRAP_SOURCE} no longer reads {ANSIBLE_TEST_CACHE_PATTERN}: '
                             'ansible-test changed how it bootstraps pip; update tests/tooling/seed_ansible_test_pip.py.')


def pinned_pip_version(python_version: str) -> str:
    """Return the pip version ansible-test installs into virtual environments for python_version."""
    packages = get_venv_packages(NativePythonConfig(version=python_version, path=sys.executable))

    return packages['pip']


def install_replacement_script(target: str) -> bool:
    """Write the get-pip replacement to target unless a foreign get-pip is there; return True if ours is in place."""
    with open(REPLACEMENT_SCRIPT, encoding='utf-8') as replacement:
        wanted = replacement.read()

    if os.path.exists(target):
        with open(target, encoding='utf-8', errors='replace') as existing:
            current = existing.read()

        if current == wanted:
            print(f'The get-pip replacement is in place at {target}.')
            return True

        if REPLACEMENT_MARKER not in current:
            print(f'Keeping the get-pip script already cached at {target}.')
            return False

    os.makedirs(os.path.dirname(target), exist_ok=True)
    temporary = target + '.tmp'

    with open(temporary, 'w', encoding='utf-8') as output:
        output.write(wanted)

    os.replace(temporary, target)
    print(f'Installed the get-pip replacement at {target}.')

    return True


def download_pip_wheel(pip_version: str, directory: str, pip_python: str) -> None:
    """Download the pip wheel of pip_version from the package index into directory unless it is there."""
    if glob.glob(os.path.join(directory, f'pip-{pip_version}-*.whl')):
        return

    with tempfile.TemporaryDirectory(prefix='pip-wheel-') as download_directory:
        command = [pip_python, '-m', 'pip', 'download', '--disable-pip-version-check', '--quiet',
                   '--no-deps', '--only-binary=:all:', '--dest', download_directory, f'pip=={pip_version}']
        result = subprocess.run(command, check=False)

        if result.returncode != 0:
            raise SystemExit(f'Could not download the pip {pip_version} wheel (exit {result.returncode}); '
                             'check that PyPI is reachable, then run make bootstrap again.')

        wheels = glob.glob(os.path.join(download_directory, f'pip-{pip_version}-*.whl'))

        if not wheels:
            raise SystemExit(f'pip download succeeded but left no pip-{pip_version} wheel in {download_directory}.')

        for wheel in wheels:
            shutil.move(wheel, os.path.join(directory, os.path.basename(wheel)))
            print(f'Stored {os.path.basename(wheel)} in {directory}.')


def main() -> int:
    """Seed the ansible-test get-pip cache for the Python versions given on the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('python_versions', nargs='*', metavar='X.Y',
                        default=[f'{sys.version_info.major}.{sys.version_info.minor}'],
                        help='Python versions ansible-test will create virtual environments for (default: this one)')
    # The compatibility matrix's venvs have no pip of their own (tests/tooling/tool_venv.sh).
    parser.add_argument('--pip-python', default=sys.executable, metavar='PYTHON',
                        help='the Python whose pip downloads the wheel (default: this one)')
    options = parser.parse_args()

    check_ansible_test_uses_cache()

    for pip_version in sorted({pinned_pip_version(version) for version in options.python_versions}):
        target = cache_script_path(pip_version)

        if install_replacement_script(target):
            download_pip_wheel(pip_version, os.path.dirname(target), options.pip_python)

    return 0


if __name__ == '__main__':
    sys.exit(main())
