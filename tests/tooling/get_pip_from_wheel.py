# azure_maintenance.scheduled_events: get-pip replacement that installs pip from a local wheel.
"""Install pip into an empty virtual environment from a pip wheel stored beside this file.

ansible-test (2.19) bootstraps pip into every virtual environment it creates
(one per sanity test, ``--venv``, ``--requirements``) by running a get-pip
script that it downloads from its own CI file host, a host this project's
machines cannot reach: only PyPI is. ansible-test skips that download when
``~/.ansible/test/cache/get_pip_<version>.py`` already exists, and runs the
cached file instead with the same arguments get-pip takes. tests/tooling/
seed_ansible_test_pip.py copies this file there together with the pip wheel of
that version fetched from PyPI, so no other host is needed.

Like get-pip, this runs pip straight from the wheel (pip supports being run
from its own wheel on sys.path) and installs the requested packages with
``install --upgrade --force-reinstall``. The pip version comes from this
file's name, the same way ansible-test names the cache file.
"""

from __future__ import annotations

import glob
import importlib
import os
import re
import sys

CACHE_FILE_PREFIX = 'get_pip_'

# get-pip installs setuptools and wheel as well unless told not to; these are
# its flags for that. ansible-test passes both, so only pip gets installed.
IMPLICIT_PACKAGE_FLAGS = {
    'setuptools': '--no-setuptools',
    'wheel': '--no-wheel',
}


def pip_version_from_file_name(path: str) -> str:
    """Return the pip version encoded in a cache file name such as get_pip_24_2.py."""
    module_name = os.path.splitext(os.path.basename(path))[0]

    if not module_name.startswith(CACHE_FILE_PREFIX):
        raise SystemExit(f'{path}: expected a file name like {CACHE_FILE_PREFIX}24_2.py; '
                         'run tests/tooling/seed_ansible_test_pip.py to install it under that name.')

    return module_name[len(CACHE_FILE_PREFIX):].replace('_', '.')


def find_pip_wheel(directory: str, version: str) -> str:
    """Return the path of the pip wheel of the given version stored in directory."""
    wheels = sorted(glob.glob(os.path.join(directory, f'pip-{version}-*.whl')))

    if not wheels:
        raise SystemExit(f'No pip {version} wheel in {directory}: run tests/tooling/seed_ansible_test_pip.py '
                         '(make bootstrap) to download it from PyPI.')

    return wheels[0]


def requirement_name(requirement: str) -> str:
    """Return the lower-case project name of a requirement such as pip==24.2."""
    return re.split(r'[\s<>=!~\[;@]', requirement, maxsplit=1)[0].lower()


def pip_install_arguments(arguments: list[str]) -> list[str]:
    """Translate get-pip command line arguments into pip install arguments."""
    skipped_flags = set(IMPLICIT_PACKAGE_FLAGS.values())
    install_arguments = ['install', '--upgrade', '--force-reinstall']
    install_arguments.extend(argument for argument in arguments if argument not in skipped_flags)

    requested = {requirement_name(argument) for argument in arguments if not argument.startswith('-')}

    for package, opt_out_flag in IMPLICIT_PACKAGE_FLAGS.items():
        if opt_out_flag not in arguments and package not in requested:
            install_arguments.append(package)

    return install_arguments


def main() -> int:
    """Install the requested packages with pip run from the stored wheel."""
    # ansible-test runs this file through runpy, which sets __file__ to the cache path.
    this_file = os.path.abspath(__file__)
    version = pip_version_from_file_name(this_file)
    wheel = find_pip_wheel(os.path.dirname(this_file), version)

    sys.path.insert(0, wheel)

    # pip is importable only now that its wheel is on sys.path.
    pip_cli = importlib.import_module('pip._internal.cli.main')

    return pip_cli.main(pip_install_arguments(sys.argv[1:]))


if __name__ == '__main__':
    sys.exit(main())
