# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection is ready for execution environments (AWX, Automation Platform, ansible-navigator).

Builds the collection tarball, creates an execution environment build
context from the sample definition next to this file with
``ansible-builder create`` (no container engine needed), and runs the same
dependency introspection the image build runs, on the installed tarball.
"""

import filecmp
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
SAMPLE_DEFINITION = os.path.join(HERE, 'execution-environment.yml')
TARBALL_NAME = 'azure_maintenance-scheduled_events.tar.gz'
COLLECTION = 'azure_maintenance.scheduled_events'
COMMAND_TIMEOUT = 300


def tool(name):
    path = os.path.join(os.path.dirname(sys.executable), name)
    if not os.access(path, os.X_OK):
        pytest.fail('%s is not installed next to %s: pip install %s' % (name, sys.executable, name))
    return path


def run(command, cwd):
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ['PATH'])
    # A collections path set by another test suite in this process would make
    # ansible-galaxy find the collection there and skip installing it.
    for name in ('ANSIBLE_COLLECTIONS_PATH', 'ANSIBLE_COLLECTIONS_PATHS'):
        env.pop(name, None)
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT,
                            check=False)
    assert result.returncode == 0, '%s failed:\n%s\n%s' % (' '.join(command), result.stdout, result.stderr)
    return result.stdout


def requirement_lines(text):
    return [line.split('#', 1)[0].strip() for line in text.splitlines() if line.split('#', 1)[0].strip()]


@pytest.fixture(scope='module')
def built_tarball(tmp_path_factory):
    out = tmp_path_factory.mktemp('collection-build')
    run([tool('ansible-galaxy'), 'collection', 'build', REPO_ROOT, '--output-path', str(out)], str(out))
    built = [name for name in os.listdir(str(out)) if name.endswith('.tar.gz')]
    assert len(built) == 1, built
    return os.path.join(str(out), built[0])


def test_collection_declares_its_python_requirements():
    with open(os.path.join(REPO_ROOT, 'meta', 'execution-environment.yml'), encoding='utf-8') as handle:
        definition = yaml.safe_load(handle)
    assert definition['version'] == 1
    python_file = definition['dependencies']['python']
    with open(os.path.join(REPO_ROOT, python_file), encoding='utf-8') as handle:
        requirements = requirement_lines(handle.read())
    names = [re.split(r'[<>=!~;\[ ]', line, maxsplit=1)[0].lower() for line in requirements]
    assert 'jmespath' in names
    # The execution environment brings Ansible itself; a collection must not pull another one in.
    assert not set(names) & {'ansible', 'ansible-core', 'ansible-base'}
    # Exact pins would make the collection impossible to combine with others in one image.
    assert not [line for line in requirements if '==' in line or '===' in line], requirements
    system_file = definition['dependencies'].get('system')
    if system_file:
        assert os.path.exists(os.path.join(REPO_ROOT, system_file))


def test_tarball_ships_the_execution_environment_metadata_and_the_eda_content(built_tarball):
    with tarfile.open(built_tarball) as archive:
        names = set(archive.getnames())
    for required in ('meta/execution-environment.yml', 'meta/ee-requirements.txt',
                     'extensions/eda/plugins/event_source/scheduled_events.py',
                     'extensions/eda/rulebooks/approve_user_events.yml', 'extensions/eda/rulebooks/maintenance.yml',
                     'extensions/eda/rulebooks/log_changes.yml', 'extensions/eda/playbooks/approve_event.yml'):
        assert required in names, required


def test_ansible_builder_context_holds_the_collection(built_tarball, tmp_path):
    definition_dir = tmp_path / 'definition'
    definition_dir.mkdir()
    shutil.copy(SAMPLE_DEFINITION, str(definition_dir / 'execution-environment.yml'))
    shutil.copy(built_tarball, str(definition_dir / TARBALL_NAME))
    context = tmp_path / 'context'
    run([tool('ansible-builder'), 'create', '--file', str(definition_dir / 'execution-environment.yml'),
         '--context', str(context), '--output-filename', 'Containerfile'], str(tmp_path))

    shipped = context / '_build' / 'collections' / TARBALL_NAME
    assert shipped.exists()
    assert filecmp.cmp(str(shipped), built_tarball, shallow=False)
    with open(str(context / '_build' / 'requirements.yml'), encoding='utf-8') as handle:
        galaxy = yaml.safe_load(handle)
    assert {'name': 'collections/%s' % TARBALL_NAME, 'type': 'file'} in galaxy['collections']
    containerfile = (context / 'Containerfile').read_text(encoding='utf-8')
    # The tarball is copied to /build and installed from there; the relative name above depends on it.
    assert 'COPY _build /build' in containerfile
    assert 'WORKDIR /build' in containerfile
    assert 'ansible-galaxy collection install' in containerfile and '-r requirements.yml' in containerfile
    # The collection's Python requirements are found by introspection during the build.
    assert 'introspect' in containerfile


def test_introspection_of_the_installed_collection_finds_its_requirements(built_tarball, tmp_path):
    collections = tmp_path / 'collections'
    run([tool('ansible-galaxy'), 'collection', 'install', '--offline', '--force', '-p', str(collections), built_tarball],
        str(tmp_path))
    requirements_file = tmp_path / 'requirements.txt'
    output = run([tool('ansible-builder'), 'introspect', '--write-pip', str(requirements_file), str(collections)],
                 str(tmp_path))
    introspected = yaml.safe_load(output.split('\n', 1)[1])
    ours = [line for line in introspected['python'] if 'from collection %s' % COLLECTION in line]
    # The lookup's JMESPath and the fleet plane's Azure credentials, nothing else.
    assert [line.split('#')[0].strip() for line in ours] == ['jmespath>=1.0', 'azure-identity>=1.12']
    assert introspected['system'] == []
    assert 'jmespath' in requirements_file.read_text(encoding='utf-8')
