"""Tests of tests/docs/guides.py: the guides' stubs for antsibull-docs stay in step with docs/*.md."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import guides  # noqa: E402  pylint: disable=wrong-import-position


def test_every_guide_has_its_stub_and_is_listed():
    # Adding docs/<guide>.md needs "python3 tests/docs/guides.py write" and an entry in docs/docsite/extra-docs.yml.
    assert guides.problems() == []


@pytest.mark.parametrize('markdown, title', [
    ('# Rolling maintenance\n\nText.\n', 'Rolling maintenance'),
    ('\n# The `scheduled_events_service` role  \n## Part\n', 'The `scheduled_events_service` role'),
])
def test_guide_title_is_the_first_heading(markdown, title):
    assert guides.guide_title(markdown) == title


@pytest.mark.parametrize('markdown', ['No heading at all\n', '## Starts at level two\n# Title\n'])
def test_guide_without_a_leading_title_is_refused(markdown):
    with pytest.raises(ValueError, match='first-level heading'):
        guides.guide_title(markdown)


def test_stub_has_the_label_and_an_rst_title_of_the_right_length():
    stub = guides.stub_text('service', 'The `x` role')
    lines = stub.splitlines()
    assert lines[0] == '.. _ansible_collections.azure_maintenance.scheduled_events.docsite.service:'
    title_index = lines.index('The ``x`` role')
    assert lines[title_index + 1] == '=' * len('The ``x`` role')
    assert '``docs/service.md``' in stub


def test_installed_page_is_the_whole_guide_under_the_stub_label(tmp_path, monkeypatch):
    guides_dir = tmp_path / 'docs'
    guides_dir.mkdir()
    (guides_dir / 'demo.md').write_text('# Demo\n\nBody [other](other.md).\n', encoding='utf-8')
    monkeypatch.setattr(guides, 'GUIDES_DIR', str(guides_dir))
    docsite = tmp_path / 'rst' / 'collections' / 'azure_maintenance' / 'scheduled_events' / 'docsite'
    docsite.mkdir(parents=True)
    (docsite / 'demo.rst').write_text('stub', encoding='utf-8')

    written = guides.install(str(tmp_path / 'rst'), str(tmp_path))

    assert written == [str(docsite / 'demo.md')]
    assert not (docsite / 'demo.rst').exists()
    assert (docsite / 'demo.md').read_text(encoding='utf-8') == (
        '(ansible_collections.azure_maintenance.scheduled_events.docsite.demo)=\n\n# Demo\n\nBody [other](other.md).\n')


def test_install_fails_clearly_when_antsibull_docs_did_not_copy_a_stub(tmp_path, monkeypatch):
    guides_dir = tmp_path / 'docs'
    guides_dir.mkdir()
    (guides_dir / 'unlisted.md').write_text('# Unlisted\n', encoding='utf-8')
    monkeypatch.setattr(guides, 'GUIDES_DIR', str(guides_dir))

    with pytest.raises(SystemExit, match='extra-docs.yml'):
        guides.install(str(tmp_path / 'rst'), str(tmp_path))


def _fake_repository(tmp_path, monkeypatch, guides_text, index_text):
    guides_dir = tmp_path / 'docs'
    guides_dir.mkdir(parents=True)
    for name, text in guides_text.items():
        (guides_dir / f'{name}.md').write_text(text, encoding='utf-8')
    index = guides_dir / 'extra-docs.yml'
    index.write_text(index_text, encoding='utf-8')
    monkeypatch.setattr(guides, 'GUIDES_DIR', str(guides_dir))
    monkeypatch.setattr(guides, 'STUBS_DIR', str(tmp_path / 'stubs'))
    monkeypatch.setattr(guides, 'EXTRA_DOCS_INDEX', str(index))
    return index


def test_write_lists_a_new_guide_and_drops_one_that_is_gone(tmp_path, monkeypatch):
    index = _fake_repository(tmp_path, monkeypatch, {'old': '# Old\n', 'new': '# New\n'},
                             '---\n# why this file exists\nsections:\n  - title: Guides\n    toctree:\n      - old\n'
                             '      - removed\n  - title: Development\n    toctree:\n      - removed\n')
    assert any('"new"' in problem for problem in guides.problems())

    guides.write_stubs()

    assert guides.problems() == []
    assert index.read_text(encoding='utf-8') == (
        '---\n# why this file exists\nsections:\n  - title: Guides\n    toctree:\n      - old\n      - new\n')
    assert sorted(os.listdir(tmp_path / 'stubs')) == ['new.rst', 'old.rst']


def test_unknown_picture_is_a_problem_and_known_ones_become_pictures(tmp_path, monkeypatch):
    _fake_repository(tmp_path, monkeypatch,
                     {'demo': '# Demo\n\n<!-- picture: rolling_state_machine -->\n\n<!-- picture: nope -->\n'}, '')
    guides.write_stubs()
    assert [problem for problem in guides.problems() if 'picture' in problem] == [
        'docs/demo.md shows the picture "nope", which tests/docs/guides.py does not know '
        '(known: example_report, rolling_state_machine)']

    _fake_repository(tmp_path / 'b', monkeypatch, {'demo': '# Demo\n\n<!-- picture: rolling_state_machine -->\n'}, '')
    page = guides.site_page('demo')
    assert '<!-- picture' not in page
    assert '![' in page and '](rolling_state_machine.svg)' in page
    assert guides.pictures_shown('demo') == ['rolling_state_machine.svg']


def test_install_puts_the_pictures_beside_the_guide(tmp_path, monkeypatch):
    _fake_repository(tmp_path, monkeypatch, {'demo': '# Demo\n\n<!-- picture: rolling_state_machine -->\n'}, '')
    docsite = tmp_path / 'rst' / 'collections' / 'azure_maintenance' / 'scheduled_events' / 'docsite'
    docsite.mkdir(parents=True)
    (docsite / 'demo.rst').write_text('stub', encoding='utf-8')
    pictures = tmp_path / 'pictures'
    pictures.mkdir()
    with pytest.raises(SystemExit, match='rolling_state_machine.svg is missing'):
        guides.install(str(tmp_path / 'rst'), str(pictures))

    (pictures / 'rolling_state_machine.svg').write_text('<svg/>', encoding='utf-8')
    guides.install(str(tmp_path / 'rst'), str(pictures))
    assert (docsite / 'rolling_state_machine.svg').read_text(encoding='utf-8') == '<svg/>'
    assert '](rolling_state_machine.svg)' in (docsite / 'demo.md').read_text(encoding='utf-8')
