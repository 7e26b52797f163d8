"""The user guides (docs/*.md) on the antsibull-docs docs site.

antsibull-docs takes "extra docs" only as RST files in docs/docsite/rst/,
listed in docs/docsite/extra-docs.yml, while the guides are Markdown (they
read well on GitHub and in the repository). So each guide has a short RST
stub there: its label, its title and a pointer to the Markdown file, which is
what Galaxy and Automation Hub show. The docs site (tests/tooling/run-docs.sh)
puts the Markdown guide itself in the stub's place, labelled the same, so
Sphinx (through MyST) renders the whole guide and its links to other guides.

Commands (run with any Python 3 that has PyYAML):
  guides.py check             fail unless every guide has an up-to-date stub listed in extra-docs.yml
  guides.py write             (re)write the stubs from the guides' titles, and list
                              new guides in extra-docs.yml (under its first section)
  guides.py install RST_DIR PICTURES_DIR
                              replace the stubs that antsibull-docs copied into
                              RST_DIR/collections/<ns>/<name>/docsite/ by the guides,
                              with the pictures of tests/docs/pictures.py (built into
                              PICTURES_DIR) in place of their markers

A guide shows a picture of the docs site with a line "<!-- picture: NAME -->"
(invisible on GitHub); PICTURES says what each name becomes on the site.
"""

import argparse
import glob
import os
import re
import shutil
import sys

import yaml

REPOSITORY_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAMESPACE, NAME = 'azure_maintenance', 'scheduled_events'
LABEL_PREFIX = f'ansible_collections.{NAMESPACE}.{NAME}.docsite.'
GUIDES_DIR = os.path.join(REPOSITORY_ROOT, 'docs')
STUBS_DIR = os.path.join(REPOSITORY_ROOT, 'docs', 'docsite', 'rst')
EXTRA_DOCS_INDEX = os.path.join(REPOSITORY_ROOT, 'docs', 'docsite', 'extra-docs.yml')

TITLE_LINE = re.compile(r'^# (?P<title>.+?)\s*$')
PICTURE_MARKER = re.compile(r'^<!-- picture: (?P<name>[a-z_]+) -->$', re.M)
# What each picture marker becomes on the site. The state machine is an image
# next to the page; the example report is a whole HTML page, which the site
# keeps at its root (html_extra_path in tests/docs/sphinx/conf.py).
PICTURES = {
    'rolling_state_machine': (
        'rolling_state_machine.svg',
        "![The rolling controller's states and transitions, drawn from TRANSITIONS](rolling_state_machine.svg)\n"),
    'example_report': (
        'example_report.html',
        '<iframe src="../../../../example_report.html" title="The report of a sample run" '
        'style="width: 100%; height: 34em; border: 1px solid #ccc;"></iframe>\n\n'
        'The report of a sample run, drawn by the playbook\'s own template '
        '(<a href="../../../../example_report.html">open it on its own</a>).\n'),
}


def guide_names() -> list:
    """Return the names (file stems) of the Markdown guides in docs/."""
    return sorted(os.path.splitext(os.path.basename(path))[0] for path in glob.glob(os.path.join(GUIDES_DIR, '*.md')))


def guide_path(name: str) -> str:
    return os.path.join(GUIDES_DIR, name + '.md')


def guide_title(markdown: str) -> str:
    """Return the text of a guide's first-level heading, which must be its first heading."""
    for line in markdown.splitlines():
        match = TITLE_LINE.match(line)
        if match:
            return match.group('title')
        if line.startswith('#'):
            break
    raise ValueError('a guide must start with a first-level heading ("# Title")')


def label(name: str) -> str:
    return LABEL_PREFIX + name


def stub_text(name: str, title: str) -> str:
    """Return the RST stub of guide `name` with heading `title`."""
    # RST needs the underline at least as long as the title; inline code marks survive as literals.
    rst_title = title.replace('`', '``')
    return (
        f'.. _{label(name)}:\n'
        '\n'
        f'.. Written by tests/docs/guides.py from docs/{name}.md: run "python3 tests/docs/guides.py write" after\n'
        '   changing the guide\'s title. The docs site shows the whole Markdown guide in its place.\n'
        '\n'
        f'{rst_title}\n'
        f'{"=" * len(rst_title)}\n'
        '\n'
        f'This guide is ``docs/{name}.md`` in the collection, written in Markdown.\n'
    )


def read(path: str) -> str:
    with open(path, encoding='utf-8') as source:
        return source.read()


def listed_in_extra_docs() -> list:
    """Return every toctree reference of docs/docsite/extra-docs.yml, in order."""
    index = yaml.safe_load(read(EXTRA_DOCS_INDEX)) or {}
    refs = []
    for section in index.get('sections') or []:
        for entry in section.get('toctree') or []:
            refs.append(entry['ref'] if isinstance(entry, dict) else entry)
    return refs


def problems() -> list:
    """Return what is out of step between the guides, their stubs and extra-docs.yml (empty when all agree)."""
    found = []
    names = guide_names()
    listed = listed_in_extra_docs()
    for name in names:
        try:
            wanted = stub_text(name, guide_title(read(guide_path(name))))
        except ValueError as error:
            found.append(f'docs/{name}.md: {error}')
            continue
        stub = os.path.join(STUBS_DIR, name + '.rst')
        if not os.path.exists(stub) or read(stub) != wanted:
            found.append(f'docs/docsite/rst/{name}.rst is missing or stale: run "python3 tests/docs/guides.py write"')
        if name not in listed:
            found.append(f'docs/{name}.md is not listed in docs/docsite/extra-docs.yml: add "{name}" to a section')
    for name in names:
        for marker in PICTURE_MARKER.finditer(read(guide_path(name))):
            if marker.group('name') not in PICTURES:
                found.append(f'docs/{name}.md shows the picture "{marker.group("name")}", which tests/docs/guides.py '
                             f'does not know (known: {", ".join(sorted(PICTURES))})')
    for ref in listed:
        if ref not in names:
            found.append(f'docs/docsite/extra-docs.yml lists "{ref}" but docs/{ref}.md does not exist')
    for stub in glob.glob(os.path.join(STUBS_DIR, '*.rst')):
        name = os.path.splitext(os.path.basename(stub))[0]
        if name not in names:
            found.append(f'docs/docsite/rst/{name}.rst has no guide docs/{name}.md: delete it')
    return found


def write_stubs() -> None:
    os.makedirs(STUBS_DIR, exist_ok=True)
    for name in guide_names():
        with open(os.path.join(STUBS_DIR, name + '.rst'), 'w', encoding='utf-8') as stub:
            stub.write(stub_text(name, guide_title(read(guide_path(name)))))
    for stub in glob.glob(os.path.join(STUBS_DIR, '*.rst')):
        if os.path.splitext(os.path.basename(stub))[0] not in guide_names():
            os.remove(stub)
    write_extra_docs_index()


def updated_sections(sections: list, names: list) -> list:
    """Return the extra-docs sections without guides that are gone, new guides added to the first section."""
    listed = set()
    result = []
    for section in sections:
        kept = [entry for entry in section.get('toctree') or []
                if (entry['ref'] if isinstance(entry, dict) else entry) in names]
        listed.update(entry['ref'] if isinstance(entry, dict) else entry for entry in kept)
        result.append(dict(section, toctree=kept))
    if not result:
        result.append({'title': 'Guides', 'toctree': []})
    result[0]['toctree'] += [name for name in names if name not in listed]
    return [section for section in result if section['toctree']]


class _IndentedListDumper(yaml.SafeDumper):
    """Indents lists under their key, as the repository's YAML files (and yamllint's defaults) have them."""

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)


def write_extra_docs_index() -> None:
    """List every guide in extra-docs.yml, keeping its sections, order and leading comment."""
    text = read(EXTRA_DOCS_INDEX) if os.path.exists(EXTRA_DOCS_INDEX) else '---\n'
    header = ''.join(line for line in text.splitlines(True) if line.startswith(('#', '---')))
    index = yaml.safe_load(text) or {}
    index['sections'] = updated_sections(index.get('sections') or [], guide_names())
    with open(EXTRA_DOCS_INDEX, 'w', encoding='utf-8') as output:
        output.write(header + yaml.dump(index, Dumper=_IndentedListDumper, sort_keys=False, default_flow_style=False,
                                        indent=2))


def site_page(name: str) -> str:
    """Return the Markdown page that stands for guide `name` on the docs site: the guide under the stub's label,
    with its picture markers replaced by the pictures."""
    # A MyST target before the title gives the page the label other pages (and the collection index) use.
    body = PICTURE_MARKER.sub(lambda marker: PICTURES[marker.group('name')][1], read(guide_path(name)))
    return f'({label(name)})=\n\n' + body


def pictures_shown(name: str) -> list:
    """Return the files of the pictures guide `name` shows."""
    return [PICTURES[marker.group('name')][0] for marker in PICTURE_MARKER.finditer(read(guide_path(name)))]


def install(rst_dir: str, pictures_dir: str) -> list:
    """Replace the stubs antsibull-docs wrote under rst_dir by the guides, each picture they show beside them;
    return the pages written."""
    docsite = os.path.join(rst_dir, 'collections', NAMESPACE, NAME, 'docsite')
    written = []
    for name in guide_names():
        stub = os.path.join(docsite, name + '.rst')
        if not os.path.exists(stub):
            raise SystemExit(f'{stub} is missing: antsibull-docs did not copy the stub of docs/{name}.md '
                             '(is it listed in docs/docsite/extra-docs.yml?)')
        for picture in pictures_shown(name):
            if not os.path.exists(os.path.join(pictures_dir, picture)):
                raise SystemExit(f'{pictures_dir}/{picture} is missing: run tests/docs/pictures.py build first')
            if picture.endswith('.svg'):
                shutil.copy(os.path.join(pictures_dir, picture), docsite)
        os.remove(stub)
        page = os.path.join(docsite, name + '.md')
        with open(page, 'w', encoding='utf-8') as output:
            output.write(site_page(name))
        written.append(page)
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    commands = parser.add_subparsers(dest='command', required=True)
    commands.add_parser('check')
    commands.add_parser('write')
    install_parser = commands.add_parser('install')
    install_parser.add_argument('rst_dir')
    install_parser.add_argument('pictures_dir')
    options = parser.parse_args()

    if options.command == 'check':
        found = problems()
        for problem in found:
            print(problem, file=sys.stderr)
        return 1 if found else 0
    if options.command == 'write':
        write_stubs()
        return 0
    for page in install(options.rst_dir, options.pictures_dir):
        print(f'guide page: {page}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
