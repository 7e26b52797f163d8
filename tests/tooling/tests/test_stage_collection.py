"""Tests for staging the collection into an ansible_collections tree."""

import os
import shutil
import stat
import subprocess

import pytest

import stage_collection

GALAXY = 'namespace: demo_ns\nname: demo_coll\nversion: 1.0.0\n'


def write(path, content='x\n', mode=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding='utf-8')
    if mode is not None:
        path.chmod(mode)


@pytest.fixture(name='checkout')
def fixture_checkout(tmp_path):
    source = tmp_path / 'checkout'
    write(source / 'galaxy.yml', GALAXY)
    write(source / 'plugins' / 'modules' / 'thing.py')
    write(source / 'tests' / 'tooling' / 'run.sh', '#!/usr/bin/env bash\n', mode=0o755)
    write(source / '.gitignore', '/ignored.txt\n')
    write(source / 'ignored.txt')
    write(source / '.venv' / 'bin' / 'python')
    write(source / 'build' / 'old' / 'file')
    write(source / 'tests' / 'output' / 'junit.xml')
    write(source / 'plugins' / '__pycache__' / 'thing.cpython-311.pyc')
    return source


def git(source, *arguments):
    subprocess.run(['git', '-C', str(source)] + list(arguments), check=True, capture_output=True, timeout=60)


@pytest.mark.skipif(not shutil.which('git'), reason='git is not installed')
def test_git_checkout_stages_tracked_and_untracked_but_not_ignored_files(checkout):
    git(checkout, 'init', '-q')
    git(checkout, 'add', 'galaxy.yml', 'plugins/modules/thing.py')

    files = stage_collection.collection_files(str(checkout))

    assert files == ['.gitignore', 'galaxy.yml', 'plugins/modules/thing.py', 'tests/tooling/run.sh']


@pytest.mark.skipif(not shutil.which('git'), reason='git is not installed')
def test_tracked_file_deleted_from_the_work_tree_is_not_staged(checkout):
    git(checkout, 'init', '-q')
    git(checkout, 'add', 'galaxy.yml', 'plugins/modules/thing.py')
    os.unlink(checkout / 'plugins' / 'modules' / 'thing.py')

    assert 'plugins/modules/thing.py' not in stage_collection.collection_files(str(checkout))


def test_checkout_without_git_leaves_out_environments_and_output(checkout):
    files = stage_collection.walked_file_list(str(checkout))
    kept = sorted(path for path in files if not stage_collection.is_excluded(path))

    assert kept == ['.gitignore', 'galaxy.yml', 'ignored.txt', 'plugins/modules/thing.py', 'tests/tooling/run.sh']


def test_staging_replaces_the_previous_copy_and_keeps_execute_bits(checkout, tmp_path):
    destination = tmp_path / 'build' / 'ansible_collections' / 'demo_ns' / 'demo_coll'
    write(destination / 'stale.txt')

    stage_collection.stage(str(checkout), str(destination), ['galaxy.yml', 'tests/tooling/run.sh'])

    assert sorted(str(path.relative_to(destination)) for path in destination.rglob('*') if path.is_file()) == [
        'galaxy.yml', 'tests/tooling/run.sh']
    assert os.stat(destination / 'tests' / 'tooling' / 'run.sh').st_mode & stat.S_IXUSR


def test_symlinks_are_copied_as_links(checkout, tmp_path):
    os.symlink('modules/thing.py', checkout / 'plugins' / 'alias.py')
    destination = tmp_path / 'staged'

    stage_collection.stage(str(checkout), str(destination), ['plugins/alias.py', 'plugins/modules/thing.py'])

    assert os.readlink(destination / 'plugins' / 'alias.py') == 'modules/thing.py'


def test_collection_name_comes_from_galaxy_yml(checkout):
    assert stage_collection.collection_name(str(checkout)) == ('demo_ns', 'demo_coll')


def test_missing_galaxy_yml_is_reported(tmp_path):
    with pytest.raises(SystemExit, match='galaxy.yml is missing'):
        stage_collection.collection_name(str(tmp_path))
