# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""check_installed_docs.py (make build): which plugins it asks ansible-doc about."""

import json
import subprocess

import check_installed_docs


def installed(tmp_path):
    """A collection installed under tmp_path with one module, one filter file and a documented role."""
    collection = tmp_path / 'ansible_collections' / 'acme' / 'demo'
    (collection / 'plugins' / 'modules').mkdir(parents=True)
    (collection / 'plugins' / 'modules' / 'ping_it.py').write_text('', encoding='utf-8')
    (collection / 'plugins' / 'modules' / '_private.py').write_text('', encoding='utf-8')
    (collection / 'plugins' / 'filter').mkdir()
    (collection / 'roles' / 'site' / 'meta').mkdir(parents=True)
    (collection / 'roles' / 'site' / 'meta' / 'argument_specs.yml').write_text('', encoding='utf-8')
    (collection / 'MANIFEST.json').write_text(json.dumps({'collection_info': {'namespace': 'acme', 'name': 'demo'}}),
                                              encoding='utf-8')
    return str(tmp_path)


def test_only_plugin_types_with_a_folder_are_listed(tmp_path, monkeypatch):
    collections_path = installed(tmp_path)
    asked = []

    def fake_ansible_doc(path, arguments):
        asked.append(arguments)
        listed = {'filter': {'acme.demo.double': 'Double it'}}.get(arguments[1], {})
        return subprocess.CompletedProcess(['ansible-doc'] + arguments, 0, json.dumps(listed), '')

    monkeypatch.setattr(check_installed_docs, 'ansible_doc', fake_ansible_doc)
    full_name, collection_dir = check_installed_docs.installed_collection(collections_path)

    to_check = check_installed_docs.plugins_to_check(collections_path, full_name, collection_dir)

    assert sorted(arguments[1] for arguments in asked) == ['filter', 'module']
    assert to_check['module'] == {'acme.demo.ping_it'}
    assert to_check['filter'] == {'acme.demo.double'}
    assert to_check['role'] == {'acme.demo.site'}
    assert not any(names for plugin_type, names in to_check.items() if plugin_type not in ('module', 'filter', 'role'))
