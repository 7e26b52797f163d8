"""Copy the collection into build/ansible_collections/<namespace>/<name>/ for ansible-test.

ansible-test only works inside a directory laid out as
``ansible_collections/<namespace>/<name>/``; the repository can be cloned
anywhere, so the tooling tests a fresh copy. The copy holds exactly the files
git would ship: tracked plus untracked-but-not-ignored files (so .venv, build/,
tests/output/ and other ignored output never get in). Without git, the whole
tree is walked, leaving out those same directories.

The copy is rebuilt from scratch every time, so what ansible-test sees never
depends on a previous run. ansible-test must then be started with
ANSIBLE_TEST_CONTENT_ROOT set to the copy: otherwise it walks up from the copy,
finds the repository's own .git, asks git for the files under build/ (ignored)
and sees none.

Prints the path of the copy. Run with the project's Python:
``.venv/bin/python tests/tooling/stage_collection.py``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

import yaml

REPOSITORY_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Top-level directories that are never part of the collection, even where
# .gitignore is missing or git is not available.
EXCLUDED_TOP_LEVEL = ('.git', '.venv', 'build', 'tests/output')
EXCLUDED_ANY_LEVEL_DIRECTORIES = ('__pycache__', '.pytest_cache')
EXCLUDED_SUFFIXES = ('.pyc', '.pyo')


def collection_name(source: str) -> tuple[str, str]:
    """Return (namespace, name) from the collection's galaxy.yml."""
    galaxy_path = os.path.join(source, 'galaxy.yml')

    try:
        with open(galaxy_path, encoding='utf-8') as galaxy_file:
            galaxy = yaml.safe_load(galaxy_file) or {}
    except FileNotFoundError:
        raise SystemExit(f'{galaxy_path} is missing: run this from a collection checkout.') from None

    try:
        return str(galaxy['namespace']), str(galaxy['name'])
    except (KeyError, TypeError):
        raise SystemExit(f'{galaxy_path} must set both namespace and name.') from None


def is_excluded(relative_path: str) -> bool:
    """Return True for paths that belong to build output or local environments rather than the collection."""
    parts = relative_path.split('/')

    if any(relative_path == top or relative_path.startswith(top + '/') for top in EXCLUDED_TOP_LEVEL):
        return True

    if any(part in EXCLUDED_ANY_LEVEL_DIRECTORIES for part in parts[:-1]):
        return True

    return relative_path.endswith(EXCLUDED_SUFFIXES)


def git_file_list(source: str) -> list[str] | None:
    """Return git's tracked and untracked-not-ignored files under source, or None when git cannot tell."""
    if not shutil.which('git'):
        return None

    probe = subprocess.run(['git', '-C', source, 'rev-parse', '--is-inside-work-tree'],
                           capture_output=True, text=True, check=False)

    if probe.returncode != 0 or probe.stdout.strip() != 'true':
        return None

    listing = subprocess.run(['git', '-C', source, 'ls-files', '-z', '--cached', '--others', '--exclude-standard'],
                             capture_output=True, check=True)
    # Paths git lists relative to the directory it runs in, which is source.
    return [path.decode('utf-8', 'surrogateescape') for path in listing.stdout.split(b'\0') if path]


def walked_file_list(source: str) -> list[str]:
    """Return every file and symlink under source, for checkouts without git."""
    paths = []

    for root, directories, files in os.walk(source):
        # A symlinked directory is copied as a link, so it is listed like a file and not descended into.
        linked_directories = [name for name in directories if os.path.islink(os.path.join(root, name))]
        directories[:] = [name for name in directories if name not in linked_directories]
        paths.extend(os.path.relpath(os.path.join(root, name), source) for name in files + linked_directories)

    return paths


def collection_files(source: str) -> list[str]:
    """Return the sorted relative paths of the files that make up the collection."""
    listed = git_file_list(source)

    if listed is None:
        listed = walked_file_list(source)

    # git still lists tracked files deleted from the work tree; they are not content.
    present = (path for path in listed if os.path.lexists(os.path.join(source, path)))

    return sorted(path for path in present if not is_excluded(path.replace(os.sep, '/')))


def stage(source: str, destination: str, files: list[str]) -> None:
    """Replace destination with a copy of the given files, keeping symlinks and file modes."""
    if os.path.lexists(destination):
        shutil.rmtree(destination)

    os.makedirs(destination)

    for relative_path in files:
        source_path = os.path.join(source, relative_path)
        target_path = os.path.join(destination, relative_path)
        os.makedirs(os.path.dirname(target_path), exist_ok=True)

        if os.path.islink(source_path):
            os.symlink(os.readlink(source_path), target_path)
        else:
            # copy2 keeps the execute bits that ansible-test's shebang test checks.
            shutil.copy2(source_path, target_path)


def check_ansible_test_sees(destination: str, files: list[str]) -> None:
    """Fail unless ansible-test, pointed at destination, finds exactly the staged files."""
    os.environ['ANSIBLE_TEST_CONTENT_ROOT'] = destination

    try:
        # Imported here: the environment variable above is read when the data context is built.
        from ansible_test._internal.data import data_context  # pylint: disable=import-outside-toplevel
    except ImportError as error:
        raise SystemExit(f'Cannot check the staged copy with ansible-test ({error}): run make bootstrap.') from None

    seen = sorted(path.rstrip(os.sep) for path in data_context().content.all_files())

    if seen != files:
        missing = sorted(set(files) - set(seen))
        extra = sorted(set(seen) - set(files))
        raise SystemExit(f'ansible-test does not see the staged files of {destination}: '
                         f'missing {missing[:10]}, unexpected {extra[:10]}.')


def main() -> int:
    """Stage the collection and print where it is."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--source', default=REPOSITORY_ROOT, help='collection checkout to copy (default: this repository)')
    parser.add_argument('--build-dir', default=None, help='directory to hold ansible_collections/ (default: SOURCE/build)')
    options = parser.parse_args()

    source = os.path.abspath(options.source)
    build_dir = os.path.abspath(options.build_dir or os.path.join(source, 'build'))
    namespace, name = collection_name(source)
    destination = os.path.join(build_dir, 'ansible_collections', namespace, name)

    if os.path.commonpath([source, destination]) == destination:
        raise SystemExit(f'The build directory {build_dir} would replace the source {source}; choose another --build-dir.')

    files = collection_files(source)
    stage(source, destination, files)
    check_ansible_test_sees(destination, files)
    print(destination)

    return 0


if __name__ == '__main__':
    sys.exit(main())
