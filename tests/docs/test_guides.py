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

    written = guides.install(str(tmp_path / 'rst'))

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
        guides.install(str(tmp_path / 'rst'))
