# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The program the role installs: one file carrying the whole package, rendered from the role's template."""

import glob
import json
import os
import runpy
import subprocess
import sys

import pytest

from test_daemon_role_templates import ROLE, render

FILES = os.path.join(ROLE, 'files')

# Imports every module of the bundle from the program at sys.argv[1] (not
# from the collection: the program sits alone in its folder), then prints
# where each came from and whether its source can be read back, as
# inspect and tracebacks read it (the module's file does not exist).
IMPORT_EVERY_MODULE = '''
import importlib, inspect, json, linecache, runpy, sys
program = sys.argv[1]
namespace = runpy.run_path(program, run_name='bundle_under_test')
sources = namespace['BUNDLED_SOURCES']
sys.meta_path.insert(0, namespace['BundledPackage'](sources))
found = {}
for relative in sorted(sources):
    name = relative[:-len('.py')].replace('/', '.')
    if name.endswith('.__init__'):
        name = name[:-len('.__init__')]
    module = importlib.import_module(name)
    found[relative] = {'file': module.__file__, 'same_source': inspect.getsource(module) == sources[relative],
                       'package': hasattr(module, '__path__'),
                       # What a traceback shows of the module's last line (linecache, as traceback reads it).
                       'last_line': linecache.getline(module.__file__, len(sources[relative].splitlines()), vars(module))}
print(json.dumps(found))
'''


@pytest.fixture(scope='module')
def program(tmp_path_factory):
    path = str(tmp_path_factory.mktemp('installed') / 'scheduled-events-service')
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(render('scheduled-events-service.py.j2'))
    return path


def package_files():
    paths = glob.glob(os.path.join(FILES, 'se_service', '*.py')) + glob.glob(os.path.join(FILES, 'se_service', 'core', '*.py'))
    return sorted(os.path.relpath(path, FILES) for path in paths)


def test_the_program_carries_every_file_of_the_package_byte_for_byte(program):
    bundled = runpy.run_path(program, run_name='bundle_under_test')['BUNDLED_SOURCES']
    assert sorted(bundled) == package_files()
    for relative in package_files():
        # The core's modules are links to plugins/module_utils: their targets' text is carried.
        with open(os.path.join(FILES, relative), encoding='utf-8') as handle:
            assert bundled[relative] == handle.read(), relative


# Text the package's files may hold one day (they are ASCII today): the
# template writes the sources as a JSON object, which must read back in
# Python as the same text.
AWKWARD_SOURCE = ('# caf\u00e9 \u2014 \U0001F600 \u2028 \\ \\n "quoted" \'single\' """triple""" \\u00e9 {{ no_jinja }}\n'
                  'VALUE = "\\t\\x00"\n')


def test_any_text_in_a_source_reads_back_the_same(tmp_path):
    path = tmp_path / 'scheduled-events-service'
    path.write_text(render('scheduled-events-service.py.j2',
                           _scheduled_events_service_bundled_sources={'se_service/awkward.py': AWKWARD_SOURCE}),
                    encoding='utf-8')
    assert runpy.run_path(str(path), run_name='bundle_under_test')['BUNDLED_SOURCES'] == {
        'se_service/awkward.py': AWKWARD_SOURCE}


def test_every_module_imports_from_the_program_alone_with_its_source_for_tracebacks(program):
    result = subprocess.run([sys.executable, '-I', '-c', IMPORT_EVERY_MODULE, program], cwd=os.path.dirname(program),
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert sorted(found) == package_files()
    program_dir = os.path.dirname(program)
    for relative, module in found.items():
        assert module['file'] == os.path.join(program_dir, relative)
        assert module['same_source'], relative
        assert module['package'] == relative.endswith('__init__.py'), relative
        with open(os.path.join(FILES, relative), encoding='utf-8') as handle:
            assert module['last_line'] == handle.read().splitlines(True)[-1], relative


def test_the_installed_program_runs_without_the_package_beside_it(program, tmp_path):
    result = subprocess.run([sys.executable, '-I', program, '--help'], cwd=str(tmp_path), capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert '--once' in result.stdout
