# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A copy of tests/tooling for testing one script with stand-ins for the scripts it runs."""

import os
import shutil

TOOLING = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def stand_in_tooling(tmp_path, real_scripts, stand_in_scripts, stand_in):
    """``tmp_path``/repo/tests/tooling with ``real_scripts`` copied as they are and each of ``stand_in_scripts``
    written with the text ``stand_in``; returns its path."""
    tooling = tmp_path / 'repo' / 'tests' / 'tooling'
    tooling.mkdir(parents=True)
    for name in real_scripts:
        shutil.copy(os.path.join(TOOLING, name), str(tooling / name))
    for name in stand_in_scripts:
        (tooling / name).write_text(stand_in, encoding='utf-8')
    return tooling
