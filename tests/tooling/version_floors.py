"""The ansible-core and Python floors the collection states, read from where it states them.

meta/runtime.yml (requires_ansible), the role's min_ansible_version, the README's
Requirements table (one row per supported ansible-core minor, with the
managed-node Python floor) and the compatibility matrix's cores
(tests/tooling/run-matrix.sh) must agree; tests/tooling/tests/test_version_floors.py
checks that. The managed-node floor of a row must also be the one the
installed ansible-core enforces (ansible.module_utils.basic refuses an older
Python): run-matrix.sh runs ``version_floors.py check-core`` in each core's venv.

Usage: python version_floors.py check-core   (with the ansible-core to check importable)
"""

import os
import re
import sys

REPOSITORY_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

README_ROW = re.compile(r'^\| (?P<core>2\.\d+) \| [^|]+ \| (?P<python>3\.\d+) or later \|$', re.M)
MATRIX_JOB = re.compile(r'^\s+"(?P<core>2\.\d+) \w+ ', re.M)
# How ansible.module_utils.basic states its Python floor: "_PY_MIN = (3, 8)"
# from 2.17 on, "_PY3_MIN = sys.version_info >= (3, 6)" before.
MODULE_FLOOR = re.compile(r'^_PY3?_MIN = (?:sys\.version_info >= )?\((?P<major>3), (?P<minor>\d+)\)', re.M)


def read(relative_path):
    with open(os.path.join(REPOSITORY_ROOT, relative_path), encoding='utf-8') as source:
        return source.read()


def requires_ansible():
    """The X.Y of meta/runtime.yml's requires_ansible (">=X.Y.0")."""
    match = re.search(r'^requires_ansible: "?>=(\d+\.\d+)\.0"?$', read('meta/runtime.yml'), re.M)
    return match.group(1)


def role_min_ansible_version():
    match = re.search(r'^\s+min_ansible_version: "?(\d+\.\d+)"?$', read('roles/scheduled_events_service/meta/main.yml'),
                      re.M)
    return match.group(1)


def readme_floors():
    """{ansible-core minor: managed-node Python floor} from the README's Requirements table."""
    return dict((match.group('core'), match.group('python')) for match in README_ROW.finditer(read('README.md')))


def readme_stated_floor():
    return re.search(r'^ansible-core (\d+\.\d+) or later', read('README.md'), re.M).group(1)


def matrix_cores():
    return sorted(set(MATRIX_JOB.findall(read('tests/tooling/run-matrix.sh'))), key=lambda core: int(core.split('.')[1]))


def enforced_python_floor(basic_source):
    """The managed-node Python floor written in the source of ansible.module_utils.basic."""
    match = MODULE_FLOOR.search(basic_source)
    if not match:
        raise ValueError('ansible.module_utils.basic states no Python floor this script understands')
    return '%s.%s' % (match.group('major'), match.group('minor'))


def check_core():
    """Compare the README's row for the importable ansible-core with the floor it enforces; return problems."""
    import ansible  # pylint: disable=import-outside-toplevel
    from ansible.release import __version__  # pylint: disable=import-outside-toplevel
    core = '.'.join(__version__.split('.')[:2])
    with open(os.path.join(os.path.dirname(ansible.__file__), 'module_utils', 'basic.py'), encoding='utf-8') as source:
        enforced = enforced_python_floor(source.read())
    stated = readme_floors().get(core)
    if stated != enforced:
        return ['README.md says managed nodes need Python %s with ansible-core %s; it enforces %s'
                % (stated or '(no row)', core, enforced)]
    print('ansible-core %s: managed-node Python %s or later, as README.md says' % (core, enforced))
    return []


def main(argv):
    if argv[1:] != ['check-core']:
        print(__doc__, file=sys.stderr)
        return 2
    problems = check_core()
    for problem in problems:
        print('ERROR: ' + problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
