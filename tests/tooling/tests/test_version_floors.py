"""The ansible-core floor and the managed-node Python floors are stated alike everywhere (version_floors.py)."""

import pytest

import version_floors


def test_every_place_states_the_same_ansible_core_floor():
    floor = version_floors.requires_ansible()
    assert version_floors.role_min_ansible_version() == floor
    assert version_floors.readme_stated_floor() == floor
    assert min(version_floors.readme_floors(), key=lambda core: int(core.split('.')[1])) == floor


def test_the_matrix_tests_every_core_the_readme_lists():
    cores = version_floors.matrix_cores()
    assert cores == sorted(version_floors.readme_floors(), key=lambda core: int(core.split('.')[1]))
    # From the floor up to the newest, no minor left out.
    minors = [int(core.split('.')[1]) for core in cores]
    assert cores[0] == version_floors.requires_ansible()
    assert minors == list(range(minors[0], minors[-1] + 1))


@pytest.mark.parametrize('source, floor', [
    ('import sys\n_PY3_MIN = sys.version_info >= (3, 6)\n_PY2_MIN = (2, 7) <= sys.version_info < (3,)\n', '3.6'),
    ('import sys\n\n_PY_MIN = (3, 8)\n', '3.8'),
])
def test_enforced_floor_is_read_from_both_spellings(source, floor):
    assert version_floors.enforced_python_floor(source) == floor


def test_an_unknown_spelling_is_an_error():
    with pytest.raises(ValueError, match='no Python floor'):
        version_floors.enforced_python_floor('_MINIMUM = "3.9"\n')


def test_the_installed_core_enforces_what_the_readme_says():
    assert version_floors.check_core() == []
