# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/core.md lists exactly the files of the core."""

import os
import re

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
# Used by the hook service only, which keeps it next to its own code.
NOT_CORE = {'_se_policy.py'}


def test_core_doc_lists_every_core_file_and_nothing_else():
    with open(os.path.join(ROOT, 'docs', 'core.md')) as handle:
        text = handle.read()
    table = text.split('| file | concern |', 1)[1].split('\n\n', 1)[0]
    listed = set(re.findall(r'^\| `(_se_[a-z_]+\.py)` \|', table, re.MULTILINE))
    present = set(name for name in os.listdir(os.path.join(ROOT, 'plugins', 'module_utils'))
                  if name.startswith('_se_') and name.endswith('.py')) - NOT_CORE
    assert listed == present
