# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures of the EDA tests; the collection layout itself is set up by eda_collection."""

import importlib.util
import os
import shutil

import pytest

from eda_collection import COLLECTIONS_PARENT, INSTALLED_COLLECTION, MADE_LINK_TREE, SOURCE_RELATIVE_PATH


def pytest_sessionfinish(session, exitstatus):
    if MADE_LINK_TREE:
        shutil.rmtree(COLLECTIONS_PARENT, ignore_errors=True)


@pytest.fixture(scope='session')
def source_module():
    """The event source module, loaded from its installed-collection path."""
    path = os.path.join(INSTALLED_COLLECTION, SOURCE_RELATIVE_PATH)
    spec = importlib.util.spec_from_file_location('scheduled_events_event_source', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
