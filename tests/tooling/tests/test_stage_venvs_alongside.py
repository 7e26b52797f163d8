# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""make test's bootstrap makes the stages' own venvs while pip installs .venv's requirements.

On a new machine that install keeps one core busy for most of a minute and
leaves the other idle; the matrix's and the docs site's venvs were then made
by their stages while every core was taken. Checked here with stand-ins for
what would take minutes (pip installing the real requirements, the venv
steps): start_alongside/finish_alongside (common.sh), `run-all.sh
--venvs-only`, and bootstrap.sh's use of both.
"""

import os
import re
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stand_in import stand_in_tooling  # noqa: E402 pylint: disable=wrong-import-position

TOOLING = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMON_SH = os.path.join(TOOLING, 'common.sh')


def run_bash(script, tmp_path, *arguments):
    """``script`` run with common.sh sourced; $2... are ``arguments``."""
    env = dict(os.environ, TMPDIR=str(tmp_path))
    return subprocess.run(['bash', '-c', 'set -euo pipefail; source "$1"; ' + script, 'test', COMMON_SH] + list(arguments),
                          env=env, capture_output=True, text=True, timeout=60, check=False)


def test_work_alongside_goes_on_while_the_script_does_and_its_output_comes_after(tmp_path):
    # The command waits for a file the script writes after start_alongside returned: had the
    # start waited for the command, the command would have given up (bounded) without it.
    waiter = tmp_path / 'waiter.sh'
    waiter.write_text('for _ in $(seq 600); do [[ -e "$1/go" ]] && echo "went on" && exit 4; sleep 0.05; done\n'
                      'echo "never saw go"\n', encoding='utf-8')
    script = '''
        start_alongside bash "$2" "$3"
        echo "the script goes on"
        touch "$3/go"
        status=0
        finish_alongside || status=$?
        echo "finished with ${status}"
        finish_alongside && echo "nothing left to finish"
    '''
    done = run_bash(script, tmp_path, str(waiter), str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        'the script goes on', '', '==== alongside: bash %s %s (exit 4) ====' % (waiter, tmp_path), 'went on',
        'finished with 4', 'nothing left to finish']
    # Its output file is removed once printed.
    assert not [name for name in os.listdir(str(tmp_path)) if name.startswith('azure-maintenance-alongside.')]


def test_a_second_start_before_the_first_is_finished_is_refused(tmp_path):
    done = run_bash('start_alongside true; start_alongside true', tmp_path)
    assert done.returncode == 1
    assert "start_alongside: 'true' has not been finished" in done.stderr


# Stand-ins for the venv steps: each notes its arguments, then waits (bounded) until both have
# started, so they pass only when run side by side.
VENV_STEP_STAND_IN = r'''#!/usr/bin/env bash
set -euo pipefail
echo "$(basename "$0") $*" >>"${STAND_IN_DIR}/started"
for _ in $(seq 600); do
    [[ $(wc -l <"${STAND_IN_DIR}/started") -ge 2 ]] && break
    sleep 0.05
done
echo "output of $(basename "$0") in ${BUILD_DIR}"
[[ "$(basename "$0")" != "${FAIL_STEP:-}" ]] || exit 3
'''
OTHER_STAGE_STAND_IN = r'''#!/usr/bin/env bash
echo "$(basename "$0") $*" >>"${STAND_IN_DIR}/others"
'''


def run_venvs_only(tmp_path, **env_overrides):
    tooling = stand_in_tooling(tmp_path, ('run-all.sh', 'common.sh'), ('run-matrix.sh', 'run-docs.sh'),
                               VENV_STEP_STAND_IN)
    for name in ('run-rolling-system-tests.sh', 'run-integration.sh', 'run-e2e-tests.sh', 'run-sanity.sh',
                 'run-system-tests.sh', 'run-lint.sh', 'run-units.sh', 'run-simulator-tests.sh', 'build-check.sh'):
        (tooling / name).write_text(OTHER_STAGE_STAND_IN, encoding='utf-8')
    stand_in_dir = tmp_path / 'stand-in'
    stand_in_dir.mkdir()
    temporary = tmp_path / 'tmp'
    temporary.mkdir()
    env = {key: value for key, value in os.environ.items() if key != 'FAIL_STEP'}
    env.update(STAND_IN_DIR=str(stand_in_dir), TMPDIR=str(temporary), **env_overrides)
    done = subprocess.run(['bash', str(tooling / 'run-all.sh'), '--venvs-only'], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    return done, stand_in_dir, temporary


def test_venvs_only_makes_the_matrix_and_docs_venvs_side_by_side_and_runs_no_stage(tmp_path):
    done, stand_in_dir, temporary = run_venvs_only(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted((stand_in_dir / 'started').read_text(encoding='utf-8').splitlines()) == [
        'run-docs.sh --venv-only', 'run-matrix.sh --venvs-only 2.16 2.17:rolling 2.18:rolling']
    assert not (stand_in_dir / 'others').exists()
    # The docs step's output as it comes, then the matrix step's, whole, under its own line; both
    # in a folder of the run's own under TMPDIR, removed after.
    build_dir = re.escape(str(temporary / 'azure-maintenance-venvs.')) + r'\w+'
    assert re.search(r'\Aoutput of run-docs.sh in %s\n\n==== alongside: bash \S+/run-matrix.sh --venvs-only 2.16 '
                     r'2.17:rolling 2.18:rolling \(exit 0\) ====\noutput of run-matrix.sh in %s\n\Z'
                     % (build_dir, build_dir), done.stdout), done.stdout
    assert os.listdir(str(temporary)) == []


@pytest.mark.parametrize('failing', ['run-matrix.sh', 'run-docs.sh'])
def test_venvs_only_fails_when_a_step_fails_after_both_have_run(tmp_path, failing):
    done, stand_in_dir, temporary = run_venvs_only(tmp_path, FAIL_STEP=failing)
    assert done.returncode == 1
    assert len((stand_in_dir / 'started').read_text(encoding='utf-8').splitlines()) == 2
    assert 'output of run-docs.sh' in done.stdout
    assert '--venvs-only 2.16 2.17:rolling 2.18:rolling (exit %d) ====\noutput of run-matrix.sh' % (
        3 if failing == 'run-matrix.sh' else 0) in done.stdout
    assert os.listdir(str(temporary)) == []


def test_the_matrix_venvs_stage_makes_the_same_venvs_as_venvs_only():
    with open(os.path.join(TOOLING, 'run-all.sh'), encoding='utf-8') as handle:
        text = handle.read()
    assert '"matrix-venvs:${MATRIX_VENVS}"' in text
    assert 'read -r -a matrix <<<"${MATRIX_VENVS}"' in text


# bootstrap.sh with what would take minutes made quick: .venv is a venv of the distribution's
# Python whose pip is a stand-in, the requirements list nothing, and run-all.sh and the get-pip
# seed are stand-ins. The stand-in pip holds the requirements' install until run-all.sh has
# started (or it gives up, bounded), and run-all.sh waits until they are installed: both
# happen only when run-all.sh is started after .venv is made, before the requirements are
# installed, and not waited for.
PIP_STAND_IN = '''import os, sys, time
notes = os.path.join(os.environ['STAND_IN_DIR'], 'run-all')
for _ in range(int(os.environ.get('PIP_STAND_IN_WAITS', '1200'))):
    if os.path.exists(notes):
        break
    time.sleep(0.05)
with open(os.path.join(os.environ['STAND_IN_DIR'], 'pip'), 'a', encoding='utf-8') as handle:
    handle.write('pip %s, run-all.sh %s\\n' % (sys.argv[1], 'started' if os.path.exists(notes) else 'not started'))
'''
RUN_ALL_STAND_IN = r'''#!/usr/bin/env bash
set -euo pipefail
echo "run-all.sh $*" >>"${STAND_IN_DIR}/run-all"
"${VENV_DIR}/bin/python" -c 'import pip' && echo "pip was there" >>"${STAND_IN_DIR}/run-all"
for _ in $(seq 1200); do
    [[ -e "${VENV_DIR}/.requirements.sha256" ]] && break
    sleep 0.05
done
[[ -e "${VENV_DIR}/.requirements.sha256" ]] && echo "requirements installed meanwhile" >>"${STAND_IN_DIR}/run-all"
echo "the stages' venvs, made"
exit "${RUN_ALL_EXIT:-0}"
'''


def run_bootstrap(tmp_path, **env_overrides):
    tooling = stand_in_tooling(tmp_path, ('bootstrap.sh', 'common.sh', 'debian-packages.txt', 'zip_compile_cache.py'),
                               ('run-all.sh',), RUN_ALL_STAND_IN)
    (tooling / 'seed_ansible_test_pip.py').write_text('print("seeded")\n', encoding='utf-8')
    requirements = tmp_path / 'repo' / 'tests' / 'requirements'
    requirements.mkdir(parents=True)
    (requirements / 'dev.txt').write_text('# nothing to install here\n', encoding='utf-8')
    venv = tmp_path / 'venv'
    subprocess.run(['/usr/bin/python3', '-m', 'venv', '--without-pip', str(venv)], check=True, timeout=120)
    site_packages = subprocess.run([str(venv / 'bin' / 'python'), '-c',
                                    'import sysconfig; print(sysconfig.get_paths()["purelib"])'],
                                   capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    os.mkdir(os.path.join(site_packages, 'pip'))
    with open(os.path.join(site_packages, 'pip', '__init__.py'), 'w', encoding='utf-8'):
        pass
    with open(os.path.join(site_packages, 'pip', '__main__.py'), 'w', encoding='utf-8') as handle:
        handle.write(PIP_STAND_IN)
    stand_in_dir = tmp_path / 'stand-in'
    stand_in_dir.mkdir()
    home = tmp_path / 'home'
    home.mkdir()
    env = {key: value for key, value in os.environ.items()
           if key not in ('BOOTSTRAP_STAGE_VENVS', 'RUN_ALL_EXIT', 'PIP_STAND_IN_WAITS')}
    env.update(VENV_DIR=str(venv), HOME=str(home), TMPDIR=str(tmp_path), STAND_IN_DIR=str(stand_in_dir),
               AZURE_MAINTENANCE_PYTHON='/usr/bin/python3', **env_overrides)
    done = subprocess.run(['bash', str(tooling / 'bootstrap.sh')], env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    return done, stand_in_dir


def test_bootstrap_for_make_test_makes_the_stage_venvs_while_it_installs_the_requirements(tmp_path):
    done, stand_in_dir = run_bootstrap(tmp_path, BOOTSTRAP_STAGE_VENVS='yes')
    assert done.returncode == 0, done.stdout + done.stderr
    assert (stand_in_dir / 'pip').read_text(encoding='utf-8') == 'pip install, run-all.sh started\n'
    assert (stand_in_dir / 'run-all').read_text(encoding='utf-8').splitlines() == [
        'run-all.sh --venvs-only', 'pip was there', 'requirements installed meanwhile']
    # Its output comes whole, after the bootstrap's own.
    assert done.stdout.rstrip().endswith("==== alongside: bash %s --venvs-only (exit 0) ====\nthe stages' venvs, made"
                                         % (tmp_path / 'repo' / 'tests' / 'tooling' / 'run-all.sh'))
    assert not [name for name in os.listdir(str(tmp_path)) if name.startswith('azure-maintenance-alongside.')]


def test_a_failure_making_the_stage_venvs_does_not_fail_the_bootstrap(tmp_path):
    done, _stand_in_dir = run_bootstrap(tmp_path, BOOTSTRAP_STAGE_VENVS='yes', RUN_ALL_EXIT='2')
    assert done.returncode == 0, done.stdout + done.stderr
    assert '--venvs-only (exit 2) ====' in done.stdout
    assert "bootstrap: making the stages' venvs failed (above); the stages that need them will make them again" \
        in done.stdout


def test_other_targets_bootstrap_without_making_the_stage_venvs(tmp_path):
    # The stand-in pip waits a second only: nothing is to start.
    done, stand_in_dir = run_bootstrap(tmp_path, PIP_STAND_IN_WAITS='20')
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (stand_in_dir / 'run-all').exists()
    # The stand-in pip gave up waiting for a run-all.sh that never came.
    assert (stand_in_dir / 'pip').read_text(encoding='utf-8') == 'pip install, run-all.sh not started\n'
    assert 'alongside' not in done.stdout
