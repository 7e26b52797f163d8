"""Tests of tests/docs/pictures.py: the docs site's pictures show what the code does."""

import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pictures  # noqa: E402  pylint: disable=wrong-import-position


@pytest.fixture(scope='module')
def collections_parent(tmp_path_factory):
    """A directory where this checkout is ansible_collections/azure_maintenance/scheduled_events."""
    parent = tmp_path_factory.mktemp('collections')
    namespace = parent / 'ansible_collections' / 'azure_maintenance'
    namespace.mkdir(parents=True)
    os.symlink(pictures.REPOSITORY_ROOT, namespace / 'scheduled_events')
    return str(parent)


@pytest.fixture(scope='module')
def modules(collections_parent):
    """(_rolling_controller, _rolling) of this checkout, imported by their collection names."""
    return pictures.collection_modules(collections_parent)


def test_the_state_machine_has_one_edge_per_transition_row(modules):
    controller = modules[0]
    dot = pictures.state_machine_dot(controller.TRANSITIONS, controller.STATES, controller.SETTLED)
    assert pictures.dot_edges(dot) == [tuple(row) for row in controller.TRANSITIONS]
    for state in controller.SETTLED:
        assert '"%s" [label="%s", peripheries=2];' % (state, state) in dot


def test_a_changed_table_changes_the_picture():
    table = (('*', 'started', 'in_impact', 'none'), ('pending', 'fits', 'draining', 'drain'))
    dot = pictures.state_machine_dot(table, ('pending', 'draining', 'in_impact'), ())
    assert pictures.dot_edges(dot) == list(table)
    assert '"pending" -> "draining" [label="fits / drain"];' in dot
    assert '"*" -> "in_impact" [label="started"];' in dot


def test_the_example_report_is_the_playbook_template_with_a_timeline(modules):
    page = pictures.example_report_page(*modules)
    assert page.startswith('<!DOCTYPE html>')
    assert 'Rolling maintenance of web, db' in page
    assert 'succeeded: 3 event(s)' in page
    # One bar per phase of each of the three events, drawn by the template.
    for phase in ('drain', 'approval', 'impact', 'verify', 'undrain'):
        assert page.count('title="%s: ' % phase) == 3, phase


@pytest.mark.skipif(shutil.which('dot') is None, reason='needs Graphviz dot (Debian package graphviz)')
def test_build_writes_the_svg_with_every_state(tmp_path, collections_parent, modules):
    paths = pictures.build(str(tmp_path), collections_path=collections_parent)
    svg = (tmp_path / 'rolling_state_machine.svg').read_text(encoding='utf-8')
    assert svg.lstrip().startswith('<?xml') and '<svg' in svg
    for state in modules[0].STATES:
        assert '>%s</text>' % state in svg, state
    assert sorted(os.path.basename(path) for path in paths) == [
        'example_report.html', 'rolling_state_machine.dot', 'rolling_state_machine.svg']
