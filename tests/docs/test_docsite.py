"""Checks of the built docs site (tests/tooling/run-docs.sh runs them after building it).

The site must have a page for every module, lookup, filter and role of the
collection and for every user guide in docs/, reachable from the front page,
and every link between its pages (file and #anchor) must resolve. Set
DOCSITE_HTML to the built site (build/docs/html); without it the tests skip.
"""

import glob
import os
import posixpath
import urllib.parse
from html.parser import HTMLParser

import pytest

REPOSITORY_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTION_PAGES = 'collections/azure_maintenance/scheduled_events'


def plugin_pages() -> list:
    """Return the site path expected for every documented plugin and role of the collection."""
    def stems(pattern):
        return [os.path.splitext(os.path.basename(path))[0] for path in glob.glob(os.path.join(REPOSITORY_ROOT, pattern))]

    pages = [f'{name}_module.html' for name in stems('plugins/modules/*.py') if name != '__init__']
    pages += [f'{name}_lookup.html' for name in stems('plugins/lookup/*.py') if name != '__init__']
    # Filters are documented one per YAML file (the Python file holds several).
    pages += [f'{name}_filter.html' for name in stems('plugins/filter/*.yml')]
    pages += [f'{os.path.basename(os.path.dirname(os.path.dirname(path)))}_role.html'
              for path in glob.glob(os.path.join(REPOSITORY_ROOT, 'roles/*/meta/argument_specs.yml'))]
    return sorted(f'{COLLECTION_PAGES}/{page}' for page in pages)


def guide_pages() -> list:
    return sorted(f'{COLLECTION_PAGES}/docsite/{os.path.splitext(os.path.basename(path))[0]}.html'
                  for path in glob.glob(os.path.join(REPOSITORY_ROOT, 'docs', '*.md')))


class PageParser(HTMLParser):
    """Collects a page's link targets (href/src), anchor ids and heading texts."""

    def __init__(self):
        super().__init__()
        self.links = []
        self.anchors = set()
        self.headings = []
        self._heading_text = None

    def handle_starttag(self, tag, attrs):
        if tag in ('h1', 'h2', 'h3', 'h4', 'h5', 'h6'):
            self._heading_text = []
        attributes = dict(attrs)
        for name in ('id', 'name'):
            if attributes.get(name) and (name == 'id' or tag == 'a'):
                self.anchors.add(attributes[name])
        for name in ('href', 'src'):
            if attributes.get(name):
                self.links.append(attributes[name])

    def handle_data(self, data):
        if self._heading_text is not None:
            self._heading_text.append(data)

    def handle_endtag(self, tag):
        if tag in ('h1', 'h2', 'h3', 'h4', 'h5', 'h6') and self._heading_text is not None:
            # Sphinx appends a pilcrow permalink to each heading and makes quotes typographic.
            text = ''.join(self._heading_text).replace('\uf0c1', '').replace('\u00b6', '')
            self.headings.append(text.replace('\u2019', "'").replace('\u201c', '"').replace('\u201d', '"').strip())
            self._heading_text = None


class Site:
    """The built site: every HTML page parsed once."""

    def __init__(self, root):
        self.root = root
        self.pages = {}
        for path in glob.glob(os.path.join(root, '**', '*.html'), recursive=True):
            parser = PageParser()
            with open(path, encoding='utf-8') as page:
                parser.feed(page.read())
            self.pages[os.path.relpath(path, root).replace(os.sep, '/')] = parser

    def internal_targets(self, page):
        """Yield (link, target page path, fragment) for the page's links that stay inside the site."""
        for link in self.pages[page].links:
            parts = urllib.parse.urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(('mailto:', 'javascript:')):
                continue
            path = urllib.parse.unquote(parts.path)
            target = posixpath.normpath(posixpath.join(posixpath.dirname(page), path)) if path else page
            yield link, target, urllib.parse.unquote(parts.fragment)

    def reachable_from(self, start):
        """Return every page reachable from start through internal links."""
        seen, todo = {start}, [start]
        while todo:
            for _link, target, _fragment in self.internal_targets(todo.pop()):
                if target in self.pages and target not in seen:
                    seen.add(target)
                    todo.append(target)
        return seen


@pytest.fixture(scope='module')
def site():
    root = os.environ.get('DOCSITE_HTML')
    if not root:
        pytest.skip('DOCSITE_HTML is not set: build the site with make docs (tests/tooling/run-docs.sh), which runs these tests')
    assert os.path.isfile(os.path.join(root, 'index.html')), f'{root} has no index.html: the docs build did not finish'
    return Site(root)


def test_the_collection_has_plugins_and_guides_to_expect():
    # Guards the two lists below against a glob that silently matches nothing.
    assert f'{COLLECTION_PAGES}/scheduled_events_info_module.html' in plugin_pages()
    assert f'{COLLECTION_PAGES}/docsite/rolling_maintenance.html' in guide_pages()


@pytest.mark.parametrize('page', plugin_pages() + guide_pages())
def test_every_plugin_role_and_guide_has_a_page_reachable_from_the_front_page(site, page):
    assert page in site.pages, f'{page} was not built'
    assert page in site.reachable_from('index.html'), f'{page} is built but no link leads to it from index.html'


def test_every_internal_link_resolves(site):
    broken = []
    for page in sorted(site.pages):
        for link, target, fragment in site.internal_targets(page):
            if target.endswith('.html'):
                if target not in site.pages:
                    broken.append(f'{page}: {link} (no page {target})')
                elif fragment and fragment not in site.pages[target].anchors:
                    broken.append(f'{page}: {link} (no anchor #{fragment} in {target})')
            elif not os.path.exists(os.path.join(site.root, target)):
                broken.append(f'{page}: {link} (no file {target})')
    assert not broken, 'broken links:\n' + '\n'.join(broken)


def markdown_headings(markdown):
    """Return the text of a Markdown guide's headings (outside code blocks), without inline-code marks."""
    headings, in_code = [], False
    for line in markdown.splitlines():
        if line.startswith('```'):
            in_code = not in_code
        elif not in_code and line.startswith('#'):
            headings.append(line.lstrip('#').strip().replace('`', ''))
    return headings


def test_guides_are_rendered_whole(site):
    # The repository's stub only points at the Markdown guide; the site must show every section of the guide itself.
    for page in guide_pages():
        name = posixpath.splitext(posixpath.basename(page))[0]
        with open(os.path.join(REPOSITORY_ROOT, 'docs', name + '.md'), encoding='utf-8') as guide:
            expected = markdown_headings(guide.read())
        shown = site.pages[page].headings
        missing = [heading for heading in expected if heading not in shown]
        assert expected and not missing, f'{page} lacks these sections of docs/{name}.md: {missing}'


def test_the_rolling_guide_shows_the_pictures_drawn_at_build_time(site):
    # tests/docs/pictures.py draws them; tests/docs/test_pictures.py checks that they show the code.
    page = f'{COLLECTION_PAGES}/docsite/rolling_maintenance.html'
    targets = [target for _link, target, _fragment in site.internal_targets(page)]
    state_machines = [target for target in targets if target.endswith('rolling_state_machine.svg')]
    assert state_machines, f'{page} does not show the state machine'
    with open(os.path.join(site.root, state_machines[0]), encoding='utf-8') as svg:
        assert '>approving</text>' in svg.read()
    assert 'example_report.html' in targets, f'{page} does not show the sample report'
    assert 'Timeline' in site.pages['example_report.html'].headings
