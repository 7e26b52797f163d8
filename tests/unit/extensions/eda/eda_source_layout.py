# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the EDA source and its fixtures are, for its unit tests.

The unit tests' own conftest already made the collection importable by its
``ansible_collections`` path (ANSIBLE_COLLECTIONS_PATH names that tree); the
fixtures are shared with the rulebook tests in tests/eda.
"""

import json
import os

COLLECTION_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
FIXTURES_DIR = os.path.join(COLLECTION_ROOT, 'tests', 'eda', 'fixtures')
SOURCE_RELATIVE_PATH = os.path.join('extensions', 'eda', 'plugins', 'event_source', 'scheduled_events.py')


def installed_source_path():
    """The source inside the ansible_collections tree the unit conftest set up."""
    parent = os.environ['ANSIBLE_COLLECTIONS_PATH'].split(os.pathsep)[0]
    return os.path.join(parent, 'ansible_collections', 'azure_maintenance', 'scheduled_events', SOURCE_RELATIVE_PATH)


def make_collections_dir(parent):
    """Link the checkout into ``parent/ansible_collections/azure_maintenance/scheduled_events``; return ``parent``."""
    namespace_dir = os.path.join(parent, 'ansible_collections', 'azure_maintenance')
    os.makedirs(namespace_dir)
    os.symlink(COLLECTION_ROOT, os.path.join(namespace_dir, 'scheduled_events'))
    return parent


def load_fixture(name):
    with open(os.path.join(FIXTURES_DIR, name), encoding='utf-8') as handle:
        return json.load(handle)
