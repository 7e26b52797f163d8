"""Render the documentation of every plugin and role of an installed collection with ansible-doc.

Used by build-check.sh after ``ansible-galaxy collection install -p DIR``:
``.venv/bin/python tests/tooling/check_installed_docs.py DIR``. Plugins are
found from the installed files (one plugin per file) and from ``ansible-doc
--list`` (filters and tests, several per file), so a plugin whose documentation
does not load is reported instead of silently missing from the list. Fails
when any documentation is missing, empty, or makes ansible-doc warn or fail.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys

# Plugin types whose files each hold exactly one plugin named after the file.
ONE_PLUGIN_PER_FILE = {
    'become': 'become',
    'cache': 'cache',
    'callback': 'callback',
    'cliconf': 'cliconf',
    'connection': 'connection',
    'httpapi': 'httpapi',
    'inventory': 'inventory',
    'lookup': 'lookup',
    'module': 'modules',
    'netconf': 'netconf',
    'shell': 'shell',
    'strategy': 'strategy',
    'vars': 'vars',
}
# Plugin types whose files may define several plugins; only ansible-doc --list knows their names.
SEVERAL_PLUGINS_PER_FILE = ('filter', 'test')
ARGUMENT_SPEC_FILES = ('meta/argument_specs.yml', 'meta/argument_specs.yaml')


def installed_collection(collections_path: str) -> tuple[str, str]:
    """Return (full name, directory) of the single collection installed under collections_path."""
    manifests = glob.glob(os.path.join(collections_path, 'ansible_collections', '*', '*', 'MANIFEST.json'))

    if len(manifests) != 1:
        raise SystemExit(f'Expected one installed collection under {collections_path}, found {len(manifests)}.')

    with open(manifests[0], encoding='utf-8') as handle:
        info = json.load(handle)['collection_info']

    return f"{info['namespace']}.{info['name']}", os.path.dirname(manifests[0])


def ansible_doc(collections_path: str, arguments: list[str]) -> subprocess.CompletedProcess:
    """Run ansible-doc against only the collections under collections_path."""
    environment = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path, ANSIBLE_COLLECTIONS_SCAN_SYS_PATH='false',
                       ANSIBLE_NOCOLOR='1')

    return subprocess.run(['ansible-doc'] + arguments, capture_output=True, text=True, env=environment, check=False)


def plugin_names_from_files(collection_dir: str, full_name: str, plugin_type: str) -> set[str]:
    """Return the names of one-plugin-per-file plugins of plugin_type found in the installed files."""
    plugin_dir = plugin_folder(collection_dir, plugin_type)
    names = set()

    for path in glob.glob(os.path.join(plugin_dir, '**', '*.py'), recursive=True):
        relative = os.path.relpath(path, plugin_dir)
        stem = os.path.splitext(relative)[0].replace(os.sep, '.')

        if os.path.basename(stem) != '__init__' and not stem.split('.')[-1].startswith('_'):
            names.add(f'{full_name}.{stem}')

    return names


def plugin_names_from_list(collections_path: str, full_name: str, plugin_type: str) -> set[str]:
    """Return the names ansible-doc --list reports for plugin_type in the collection."""
    result = ansible_doc(collections_path, ['-t', plugin_type, '--list', '--json', full_name])

    if result.returncode != 0:
        raise SystemExit(f'ansible-doc -t {plugin_type} --list failed:\n{result.stderr}')

    return set(json.loads(result.stdout or '{}'))


def role_names(collection_dir: str, full_name: str) -> set[str]:
    """Return the roles that declare argument specs, which is what ansible-doc documents for roles."""
    roles_dir = os.path.join(collection_dir, 'roles')
    names = set()

    for role in sorted(os.listdir(roles_dir)) if os.path.isdir(roles_dir) else []:
        if any(os.path.isfile(os.path.join(roles_dir, role, spec)) for spec in ARGUMENT_SPEC_FILES):
            names.add(f'{full_name}.{role}')

    return names


def doc_problems(collections_path: str, full_name: str, plugin_type: str, names: set[str]) -> list[str]:
    """Load and render the documentation of names; return a description of each problem found."""
    ordered = sorted(names)
    problems = []

    loaded = ansible_doc(collections_path, ['-t', plugin_type, '--json'] + ordered)

    if loaded.returncode != 0:
        return [f'ansible-doc -t {plugin_type} --json failed ({loaded.returncode}):\n{loaded.stderr}']

    documents = json.loads(loaded.stdout or '{}')

    for name in ordered:
        document = documents.get(name) or {}
        content = document.get('entry_points') if plugin_type == 'role' else document.get('doc')

        if not content:
            problems.append(f'{plugin_type} {name}: no documentation loaded')

    rendered = ansible_doc(collections_path, ['-t', plugin_type] + ordered)
    complaints = [line for line in rendered.stderr.splitlines() if '[WARNING]' in line or '[ERROR]' in line or full_name in line]

    if rendered.returncode != 0 or complaints:
        problems.append(f'ansible-doc -t {plugin_type} exited {rendered.returncode}:\n' + '\n'.join(complaints or [rendered.stderr]))

    return problems


def plugin_folder(collection_dir: str, plugin_type: str) -> str:
    """The folder a collection keeps its plugins of plugin_type in (plugins/modules for modules)."""
    return os.path.join(collection_dir, 'plugins', ONE_PLUGIN_PER_FILE.get(plugin_type, plugin_type))


def plugins_to_check(collections_path: str, full_name: str, collection_dir: str) -> dict[str, set[str]]:
    """{plugin type or 'role': the names to render}. A type without its folder has no plugins to list:
    ansible-doc --list is asked only about the others (each run costs about a CPU-second)."""
    to_check: dict[str, set[str]] = {}

    for plugin_type in list(ONE_PLUGIN_PER_FILE) + list(SEVERAL_PLUGINS_PER_FILE):
        if not os.path.isdir(plugin_folder(collection_dir, plugin_type)):
            to_check[plugin_type] = set()
        elif plugin_type in ONE_PLUGIN_PER_FILE:
            to_check[plugin_type] = (plugin_names_from_files(collection_dir, full_name, plugin_type)
                                     | plugin_names_from_list(collections_path, full_name, plugin_type))
        else:
            to_check[plugin_type] = plugin_names_from_list(collections_path, full_name, plugin_type)

    to_check['role'] = role_names(collection_dir, full_name)
    return to_check


def main() -> int:
    """Check the documentation of every plugin and role of the installed collection."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('collections_path', help='directory given to ansible-galaxy collection install -p')
    options = parser.parse_args()

    collections_path = os.path.abspath(options.collections_path)
    full_name, collection_dir = installed_collection(collections_path)
    to_check = plugins_to_check(collections_path, full_name, collection_dir)

    problems = []

    for plugin_type, names in to_check.items():
        if names:
            print(f'ansible-doc -t {plugin_type}: {", ".join(sorted(names))}')
            problems.extend(doc_problems(collections_path, full_name, plugin_type, names))

    if not any(to_check.values()):
        print(f'NOTE: {full_name} has no plugins or documented roles yet.')

    for problem in problems:
        print(f'ERROR: {problem}', file=sys.stderr)

    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
