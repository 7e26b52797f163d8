# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""run-sanity.sh: two sanity runs sharing one new HOME both pass.

ansible-test keeps its sanity venvs in ~/.ansible/test/venv, named by the Python version and the requirements, not by
run: two make test runs at once on a new machine (or one run's two ansible-core sanity stages) made the same venv
together and one failed (FileExistsError in the pip copy, or "does not have pip available"). The ansible-doc test is
the one run here, on one plugin: its venv needs pip and packages installed, so the two runs meet while making it
(without the lock they failed every time: five of five on the whole collection, three of three on one plugin), and it
costs seconds, not the minutes of pylint's; the whole collection would only make it longer. Like make sanity on a new
HOME, it installs that venv's requirements from the package index: pip's configuration and cache are the ones of the
HOME the tests run in, as tests/tooling/ci-fresh.sh keeps them.
"""

import os
import subprocess
import sys

TOOLING = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO_ROOT = os.path.dirname(os.path.dirname(TOOLING))
# The sanity target of the runs (a path in the collection).
ONE_PLUGIN = 'plugins/modules/scheduled_events_info.py'


def with_new_home(home):
    """The environment with another HOME, keeping pip's configuration (where packages come from) and cache.

    pip allows runs to share a cache, so the new HOME downloads nothing the tests' HOME already has.
    """
    env = dict(os.environ, HOME=str(home))
    env['XDG_CONFIG_HOME'] = os.environ.get('XDG_CONFIG_HOME') or os.path.expanduser('~/.config')
    env['PIP_CACHE_DIR'] = os.environ.get('PIP_CACHE_DIR') or os.path.join(
        os.environ.get('XDG_CACHE_HOME') or os.path.expanduser('~/.cache'), 'pip')
    return env


def test_two_sanity_runs_sharing_a_new_home_both_make_and_use_the_venvs(tmp_path):
    home = tmp_path / 'home'
    home.mkdir()
    env = with_new_home(home)
    # What make bootstrap does for a HOME: the get-pip cache ansible-test bootstraps its venvs' pip from.
    seeded = subprocess.run([sys.executable, os.path.join(TOOLING, 'seed_ansible_test_pip.py')], env=env,
                            capture_output=True, text=True, timeout=300, check=False)
    assert seeded.returncode == 0, seeded.stdout + seeded.stderr

    runs = []
    for name in ('a', 'b'):
        (tmp_path / f'tmp-{name}').mkdir()
        run_env = dict(env, BUILD_DIR=str(tmp_path / f'build-{name}'), TMPDIR=str(tmp_path / f'tmp-{name}'))
        # One plugin is enough to need the venv; the whole collection would only make the runs longer.
        runs.append(subprocess.Popen(['bash', os.path.join(TOOLING, 'run-sanity.sh'), '--test', 'ansible-doc', ONE_PLUGIN],
                                     cwd=REPO_ROOT, env=run_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True))
    try:
        outputs = [run.communicate(timeout=600)[0] for run in runs]
    finally:
        for run in runs:
            if run.poll() is None:
                run.kill()
                run.wait(timeout=60)

    assert [run.returncode for run in runs] == [0, 0], '\n\n'.join(outputs)
    for output in outputs:
        assert 'Running sanity test "ansible-doc"' in output, output
    venvs = list((home / '.ansible' / 'test' / 'venv' / 'sanity.ansible-doc').glob('*/*/marker.txt'))
    assert len(venvs) == 1, venvs
