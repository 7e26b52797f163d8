# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The environment tests/tooling/common.sh gives every stage: Python keeps its compiled files even where the
machine sets PYTHONDONTWRITEBYTECODE, so the project's own code is not compiled again in every process."""

import os
import subprocess
import sys

TOOLING = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMON_SH = os.path.join(TOOLING, 'common.sh')


def test_python_started_by_the_tooling_keeps_compiled_files(tmp_path):
    (tmp_path / 'project_module.py').write_text('VALUE = 1\n', encoding='utf-8')
    command = '"$2" -c "import sys, project_module; print(sys.dont_write_bytecode)"'
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE='1', VENV_DIR=str(tmp_path / 'no-venv'))
    done = subprocess.run(['bash', '-c', 'source "$1"; ' + command, 'test', COMMON_SH, sys.executable],
                          env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == 'False'
    assert [name for name in os.listdir(str(tmp_path / '__pycache__')) if name.startswith('project_module.')]
