# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The EDA event source module, loaded from its installed-collection path as ansible-rulebook loads it."""

import importlib.util

import pytest

from eda_source_layout import installed_source_path


@pytest.fixture(scope='session')
def source_module():
    spec = importlib.util.spec_from_file_location('scheduled_events_event_source', installed_source_path())
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
