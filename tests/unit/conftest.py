# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make ``ansible_collections.azure_maintenance.scheduled_events`` importable.

Unit tests import the collection by its real package path, as Ansible does.
When the checkout is not already inside an ``ansible_collections/<ns>/<name>``
tree (the usual case for a clone), a link tree is made in a temporary
directory and put first on sys.path, and Ansible's collection loader is told
about it so plugin imports resolve the same way they do under ansible-test.
"""

import atexit
import os
import shutil
import sys
import tempfile

COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _collections_parent():
    parts = COLLECTION_ROOT.split(os.sep)
    if len(parts) >= 3 and parts[-3] == 'ansible_collections':
        return os.sep.join(parts[:-3])
    parent = tempfile.mkdtemp(prefix='se-unit-')
    # rmtree does not follow the symlink, so the checkout itself is safe.
    atexit.register(shutil.rmtree, parent, True)
    namespace_dir = os.path.join(parent, 'ansible_collections', 'azure_maintenance')
    os.makedirs(namespace_dir)
    os.symlink(COLLECTION_ROOT, os.path.join(namespace_dir, 'scheduled_events'))
    return parent


COLLECTIONS_PARENT = _collections_parent()
if COLLECTIONS_PARENT not in sys.path:
    sys.path.insert(0, COLLECTIONS_PARENT)
os.environ['ANSIBLE_COLLECTIONS_PATH'] = COLLECTIONS_PARENT

try:
    from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
except ImportError:  # ansible-core is not installed: only the core's stdlib code can be tested
    _AnsibleCollectionFinder = None

if _AnsibleCollectionFinder is not None:
    # pylint: disable=protected-access
    _AnsibleCollectionFinder(paths=[COLLECTIONS_PARENT])._install()


# Importing ansible-core's controller packages (plugin loader, errors, display)
# sets ansible.module_utils._internal.is_controller; from then on, in
# ansible-core 2.19, a module's warn() goes to the display instead of its
# result. pytest imports every test file before running any, so the flag is
# already set when the first test starts. Each test therefore starts with the
# flag its code sees in real use: unset for the modules and the code they ship
# to managed nodes (and the hook daemon, which runs there too), set for
# everything that runs on the controller. Setting it for every test, not only
# where it changes, keeps the tests independent of their order, which differs
# between pytest's workers.
MODULE_SIDE_TEST_DIRS = tuple(
    os.path.join(COLLECTION_ROOT, 'tests', 'unit', *parts) + os.sep
    for parts in (('plugins', 'modules'), ('plugins', 'module_utils'), ('service_daemon',))
)

try:
    from ansible.module_utils import _internal as _module_utils_internal
except ImportError:  # ansible-core before 2.19 has no such flag
    _module_utils_internal = None


def _set_controller_flag(value):
    if hasattr(_module_utils_internal, 'is_controller'):
        _module_utils_internal.is_controller = value


def pytest_runtest_setup(item):
    _set_controller_flag(not str(item.fspath).startswith(MODULE_SIDE_TEST_DIRS))
