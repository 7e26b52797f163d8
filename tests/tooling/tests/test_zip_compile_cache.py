# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""zip_compile_cache: what a test venv's Python compiles from a zip (a module run's AnsiballZ payload) is kept.

Each case imports a module from a zip in a new interpreter without site (so no copy installed in a venv takes
part), with the cache installed from tests/tooling and its folder named by the environment.
"""

import json
import marshal
import os
import subprocess
import sys
import zipfile

import zip_compile_cache

TOOLING = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = 'def answer():\n    return 42\n\n\ndef fail():\n    raise RuntimeError("from the zip")\n'
# Imports the module "payload" from the zip in argv[1] and prints what it answers and where its code says it is.
CHILD = r'''
import json, sys, traceback
sys.path.insert(0, sys.argv[2])
import zip_compile_cache
zip_compile_cache.install()
zip_compile_cache.install()
sys.path.insert(0, sys.argv[1])
import payload
try:
    payload.fail()
except RuntimeError:
    where = traceback.extract_tb(sys.exc_info()[2])[-1].filename
print(json.dumps({'answer': payload.answer(), 'fail_in': where, 'answer_in': payload.answer.__code__.co_filename}))
'''


def make_zip(folder, source=SOURCE):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / 'payload.zip'
    with zipfile.ZipFile(path, 'w') as archive:
        archive.writestr('payload.py', source)
    return path


def import_from(archive, cache):
    result = subprocess.run([sys.executable, '-S', '-B', '-c', CHILD, str(archive), TOOLING],
                            env=dict(os.environ, AZURE_MAINTENANCE_ZIP_COMPILE_CACHE=str(cache)),
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def entries(cache):
    return sorted(os.listdir(cache)) if cache.exists() else []


def test_a_module_compiled_once_is_loaded_from_the_cache_under_the_name_of_the_zip_it_now_comes_from(tmp_path):
    cache = tmp_path / 'cache'
    first = make_zip(tmp_path / 'run1')
    assert import_from(first, cache)['answer'] == 42
    [entry] = entries(cache)
    assert entry.startswith(sys.implementation.cache_tag)
    # What the cache holds is what runs: an entry put there under this source's key answers instead.
    with open(cache / entry, 'wb') as handle:
        handle.write(marshal.dumps(compile(SOURCE.replace('42', '7'), 'elsewhere.py', 'exec')))
    second = make_zip(tmp_path / 'run2')
    seen = import_from(second, cache)
    assert seen['answer'] == 7
    # Tracebacks and code name this run's archive, as a fresh compile would.
    assert seen['fail_in'] == seen['answer_in'] == str(second / 'payload.py')
    assert entries(cache) == [entry]


def test_another_source_is_another_entry(tmp_path):
    cache = tmp_path / 'cache'
    import_from(make_zip(tmp_path / 'run1'), cache)
    assert import_from(make_zip(tmp_path / 'run2', SOURCE.replace('42', '43')), cache)['answer'] == 43
    assert len(entries(cache)) == 2


def test_an_unusable_entry_is_compiled_again_and_replaced(tmp_path):
    cache = tmp_path / 'cache'
    archive = make_zip(tmp_path / 'run')
    import_from(archive, cache)
    [entry] = entries(cache)
    for unusable in (b'', b'\xe3\x00half', marshal.dumps('not code')):
        (cache / entry).write_bytes(unusable)
        assert import_from(archive, cache)['answer'] == 42
        assert marshal.loads((cache / entry).read_bytes()).co_filename == str(archive / 'payload.py')
    assert entries(cache) == [entry]


def test_a_cache_that_cannot_be_written_only_means_no_caching(tmp_path):
    not_a_folder = tmp_path / 'file'
    not_a_folder.write_text('taken')
    assert import_from(make_zip(tmp_path / 'run'), not_a_folder)['answer'] == 42
    assert import_from(make_zip(tmp_path / 'run'), not_a_folder / 'below')['answer'] == 42


def test_an_empty_folder_name_turns_it_off(tmp_path, monkeypatch):
    monkeypatch.setenv('AZURE_MAINTENANCE_ZIP_COMPILE_CACHE', '')
    assert zip_compile_cache.cache_folder() is None
    monkeypatch.delenv('AZURE_MAINTENANCE_ZIP_COMPILE_CACHE')
    assert zip_compile_cache.cache_folder() == os.path.join(sys.prefix, 'zip-compile-cache')


def test_a_full_folder_is_halved_oldest_first_before_an_entry_is_written(tmp_path, monkeypatch):
    monkeypatch.setattr(zip_compile_cache, 'MAX_ENTRIES', 4)
    for age in range(4):
        path = tmp_path / ('entry-%d' % age)
        path.write_bytes(b'x')
        os.utime(path, (1000 - age, 1000 - age))
    zip_compile_cache.make_room(str(tmp_path))
    assert entries(tmp_path) == ['entry-0', 'entry-1']
    zip_compile_cache.make_room(str(tmp_path))
    assert entries(tmp_path) == ['entry-0', 'entry-1']


def test_install_zip_compile_cache_makes_a_venvs_python_keep_what_it_compiles_from_a_zip(tmp_path):
    venv = tmp_path / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(venv)], check=True, timeout=120)
    script = 'set -euo pipefail; source "$1/common.sh"; install_zip_compile_cache "$2"; install_zip_compile_cache "$2"'
    subprocess.run(['bash', '-c', script, 'test', TOOLING, str(venv)], check=True, timeout=120)
    archive = make_zip(tmp_path / 'run')
    env = dict(os.environ)
    env.pop('AZURE_MAINTENANCE_ZIP_COMPILE_CACHE', None)
    probe = 'import sys; sys.path.insert(0, sys.argv[1]); import payload; print(payload.answer())'
    result = subprocess.run([str(venv / 'bin' / 'python'), '-c', probe, str(archive)], env=env,
                            capture_output=True, text=True, timeout=60, check=False)
    assert (result.returncode, result.stdout) == (0, '42\n'), result.stderr
    assert len(entries(venv / 'zip-compile-cache')) == 1
