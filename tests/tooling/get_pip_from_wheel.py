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

What ansible-test asks for (that pip alone, into a new virtual environment)
is copied instead: the first time, pip from the wheel installs itself into a
folder beside the wheel, one per Python (``pip-<version>-<cache tag>``),
compiled; each virtual environment after that gets a copy of it, with its own
``bin/pip`` scripts and their lines in RECORD. Running pip from the wheel
compiles it from source and installing it compiles it again: about 5 CPU-s a
virtual environment, and ansible-test makes one per sanity test on a new
machine; a copy costs a fraction of a second and the same files end up there.
"""

from __future__ import annotations

import base64
import glob
import hashlib
import importlib
import os
import re
import shutil
import sys
import sysconfig
import tempfile

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


# The only arguments besides "pip==<version>" with which pip alone is copied.
FLAGS_OF_A_PIP_ONLY_INSTALL = {'--disable-pip-version-check', '--quiet', '-q'} | set(IMPLICIT_PACKAGE_FLAGS.values())


def asks_for_pip_alone(arguments: list[str], version: str) -> bool:
    """Whether the get-pip arguments ask for pip of this version and nothing else (what ansible-test asks)."""
    wanted = [argument for argument in arguments if argument not in FLAGS_OF_A_PIP_ONLY_INSTALL]
    return wanted == [f'pip=={version}'] and set(IMPLICIT_PACKAGE_FLAGS.values()) <= set(arguments)


def installed_pip_folder(directory: str, version: str) -> str:
    """Where pip of this version, installed and compiled by this Python, is kept for copying."""
    return os.path.join(directory, f'pip-{version}-{sys.implementation.cache_tag}')


def record_hash(data: bytes) -> str:
    """A file's hash as RECORD writes it."""
    return 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()


def pip_main_from(wheel: str):
    """pip's command-line entry point, imported from the wheel itself."""
    sys.path.insert(0, wheel)
    # pip is importable only now that its wheel is on sys.path.
    return importlib.import_module('pip._internal.cli.main').main


def rewrite_record(record: str, line_for) -> None:
    """Rewrite a RECORD file: ``line_for(path, line)`` gives each line's replacement, or None to drop it."""
    with open(record, encoding='utf-8') as kept:
        lines = [line_for(line.split(',', 1)[0], line) for line in kept.read().splitlines()]
    with open(record, 'w', encoding='utf-8') as written:
        written.write('\n'.join(line for line in lines if line is not None) + '\n')


def forget_where_it_came_from(folder: str) -> None:
    """Drop direct_url.json, which says pip came from a wheel file: installed from an index, it would have none."""
    for direct_url in glob.glob(os.path.join(folder, 'pip-*.dist-info', 'direct_url.json')):
        os.remove(direct_url)
        name = os.path.relpath(direct_url, folder)
        rewrite_record(os.path.join(os.path.dirname(direct_url), 'RECORD'),
                       lambda path, line, name=name: None if path == name else line)


def keep_installed_pip(wheel: str, folder: str) -> None:
    """Install pip from the wheel into folder (pip install --target), unless another run already has."""
    if os.path.isdir(folder):
        return

    staging = tempfile.mkdtemp(prefix=os.path.basename(folder) + '.', dir=os.path.dirname(folder))
    try:
        status = pip_main_from(wheel)(['install', '--quiet', '--disable-pip-version-check', '--no-index',
                                       '--no-deps', '--target', staging, wheel])
        if status:
            raise SystemExit(f'pip could not install its own wheel {wheel} into {staging} (exit {status}).')
        forget_where_it_came_from(staging)
        try:
            os.rename(staging, folder)
        except OSError:
            # Another run put its copy there first: the same files.
            if not os.path.isdir(folder):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def copy_installed_pip(folder: str) -> None:
    """Install the kept pip into this virtual environment: its package and metadata, new scripts, RECORD to match.

    Modification times are kept (copy2), so the compiled files stay valid for their sources.
    """
    site_packages = sysconfig.get_paths()['purelib']
    scripts = sysconfig.get_paths()['scripts']
    os.makedirs(scripts, exist_ok=True)
    script_lines = {}
    for name in sorted(os.listdir(os.path.join(folder, 'bin'))):
        with open(os.path.join(folder, 'bin', name), 'rb') as kept:
            body = kept.read().split(b'\n', 1)[1]
        script = b'#!' + os.fsencode(sys.executable) + b'\n' + body
        path = os.path.join(scripts, name)
        with open(path, 'wb') as written:
            written.write(script)
        os.chmod(path, 0o755)
        script_lines[name] = '%s,%s,%d' % (os.path.relpath(path, site_packages), record_hash(script), len(script))

    for entry in sorted(os.listdir(folder)):
        if entry != 'bin':
            shutil.copytree(os.path.join(folder, entry), os.path.join(site_packages, entry), copy_function=shutil.copy2)

    for record in glob.glob(os.path.join(site_packages, 'pip-*.dist-info', 'RECORD')):
        # The scripts' lines name them where pip install --target put them.
        rewrite_record(record, lambda path, line: (script_lines.get(os.path.basename(path), line)
                                                   if path.startswith('../') else line))


def copies_pip(arguments: list[str], version: str) -> bool:
    """Whether pip alone is asked for, into a virtual environment that has none yet (so a copy is all it takes)."""
    return (asks_for_pip_alone(arguments, version) and sys.prefix != sys.base_prefix
            and not glob.glob(os.path.join(sysconfig.get_paths()['purelib'], 'pip*')))


def main() -> int:
    """Install the requested packages with pip run from the stored wheel."""
    # ansible-test runs this file through runpy, which sets __file__ to the cache path.
    this_file = os.path.abspath(__file__)
    version = pip_version_from_file_name(this_file)
    wheel = find_pip_wheel(os.path.dirname(this_file), version)
    arguments = sys.argv[1:]

    if copies_pip(arguments, version):
        folder = installed_pip_folder(os.path.dirname(this_file), version)
        keep_installed_pip(wheel, folder)
        copy_installed_pip(folder)
        return 0

    return pip_main_from(wheel)(pip_install_arguments(arguments))


if __name__ == '__main__':
    sys.exit(main())
