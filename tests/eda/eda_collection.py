# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection as Python sees it when installed, for the EDA tests.

The event source imports the collection's core by its
``ansible_collections.azure_maintenance.scheduled_events`` path, so the tests
use a link tree laid out like an installed collection, exactly as
ansible-rulebook finds it. Importing this module puts that tree on sys.path.
"""

import json
import os
import sys
import tempfile

COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures')
SOURCE_RELATIVE_PATH = os.path.join('extensions', 'eda', 'plugins', 'event_source', 'scheduled_events.py')


def make_collections_dir(parent):
    """Link the checkout into ``parent/ansible_collections/azure_maintenance/scheduled_events``; return ``parent``."""
    namespace_dir = os.path.join(parent, 'ansible_collections', 'azure_maintenance')
    os.makedirs(namespace_dir)
    os.symlink(COLLECTION_ROOT, os.path.join(namespace_dir, 'scheduled_events'))
    return parent


def _collections_parent():
    parts = COLLECTION_ROOT.split(os.sep)
    if len(parts) >= 3 and parts[-3] == 'ansible_collections':
        return os.sep.join(parts[:-3]), False
    return make_collections_dir(tempfile.mkdtemp(prefix='se-eda-')), True


COLLECTIONS_PARENT, MADE_LINK_TREE = _collections_parent()
INSTALLED_COLLECTION = os.path.join(COLLECTIONS_PARENT, 'ansible_collections', 'azure_maintenance', 'scheduled_events')
if COLLECTIONS_PARENT not in sys.path:
    sys.path.insert(0, COLLECTIONS_PARENT)


def load_fixture(name):
    with open(os.path.join(FIXTURES_DIR, name), encoding='utf-8') as handle:
        return json.load(handle)
