# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tool_venv.sh: the venvs of the docs site and of the matrix's ansible-core minors.

They get no pip of their own (ensurepip costs seconds of CPU a venv on a new
machine): the project venv's pip installs into them. Offline: the package
installed is a wheel the test builds.
"""

import os
import subprocess
import zipfile

from get_pip_from_wheel import record_hash

TOOLING = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_wheel(directory):
    """A wheel of one pure-Python module, tool_venv_probe, built by hand (no build backend, no index)."""
    name = 'tool_venv_probe'
    files = {
        f'{name}.py': 'ANSWER = 42\n',
        f'{name}-1.0.dist-info/METADATA': f'Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n',
        f'{name}-1.0.dist-info/WHEEL': 'Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n',
    }
    record = []
    for path, text in files.items():
        record.append(f'{path},{record_hash(text.encode())},{len(text.encode())}')
    record.append(f'{name}-1.0.dist-info/RECORD,,')
    files[f'{name}-1.0.dist-info/RECORD'] = '\n'.join(record) + '\n'
    wheel = os.path.join(str(directory), f'{name}-1.0-py3-none-any.whl')
    with zipfile.ZipFile(wheel, 'w') as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def prepare(venv, wheel):
    script = ('source "$1/common.sh"; source "$1/tool_venv.sh"; '
              'prepare_tool_venv "$2" probe --no-index "$3"')
    return subprocess.run(['bash', '-c', script, 'bash', TOOLING, str(venv), wheel], capture_output=True,
                          text=True, timeout=300, check=False)


def test_a_tool_venv_has_what_was_asked_and_no_pip(tmp_path):
    wheel = build_wheel(tmp_path)
    venv = tmp_path / 'venvs' / 'probe'

    first = prepare(venv, wheel)
    assert first.returncode == 0, first.stdout + first.stderr
    assert 'creating' in first.stdout

    python = str(venv / 'bin' / 'python')
    answer = subprocess.run([python, '-c', 'import tool_venv_probe; print(tool_venv_probe.ANSWER)'],
                            capture_output=True, text=True, timeout=60, check=False)
    assert answer.stdout.strip() == '42', answer.stderr
    has_pip = subprocess.run([python, '-c', 'import importlib.util; print(importlib.util.find_spec("pip") is None)'],
                             capture_output=True, text=True, timeout=60, check=False)
    assert has_pip.stdout.strip() == 'True', 'the tool venv got a pip of its own'

    again = prepare(venv, wheel)
    assert again.returncode == 0, again.stdout + again.stderr
    assert 'venv up to date' in again.stdout
