"""Sphinx settings of the collection's docs site (tests/tooling/run-docs.sh, make docs).

antsibull-docs writes the plugin and role pages (RST) from the collection's
own documentation; the user guides are the Markdown files of docs/, read
through MyST. The site is built offline: no intersphinx inventories are
fetched, so references outside the collection must not be made.
"""

import os

project = 'azure_maintenance.scheduled_events'
copyright = 'azure_maintenance.scheduled_events contributors; GPL-3.0-or-later'  # pylint: disable=redefined-builtin
title = 'azure_maintenance.scheduled_events'
html_short_title = title

extensions = ['sphinx_antsibull_ext', 'myst_parser']

# The guides are written for GitHub: its heading anchors (#the-demo) must work here too.
myst_heading_anchors = 3

pygments_style = 'ansible'
# antsibull-docs marks its examples yaml+jinja itself; a guide's code block without a language stays plain.
highlight_language = 'none'
# A shell example that Pygments cannot colour (JSON in quotes) is still shown, uncoloured: not an error.
suppress_warnings = ['misc.highlighting_failure']

html_theme = 'sphinx_ansible_theme'
html_show_sphinx = False
html_use_smartypants = True
html_use_modindex = False
html_use_index = False
html_copy_source = False
html_theme_options = {'display_version': False}
# Whole HTML pages the guides embed (the sample maintenance report of tests/docs/pictures.py), kept at the site's root.
html_extra_path = [os.path.join(os.environ['DOCSITE_EXTRA_FILES'], 'example_report.html')]

default_role = 'any'
# Every reference must resolve: a broken one fails the build (-W).
nitpicky = True

# Labels of docs.ansible.com pages that antsibull-docs' pages link to, from the
# local inventory run-docs.sh writes (tests/docs/sphinx/ansible_inventory.py).
extensions.append('sphinx.ext.intersphinx')
intersphinx_mapping = {
    'ansible': ('https://docs.ansible.com/ansible/latest/', os.environ['DOCSITE_ANSIBLE_INVENTORY']),
}
