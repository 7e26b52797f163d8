"""Write the intersphinx inventory of the few docs.ansible.com pages the docs site links to.

antsibull-docs' pages refer to a few pages of the Ansible documentation by
label (common_return_values, ansible_configuration_settings, action_plugins). Sphinx resolves
such labels through an intersphinx inventory that it would normally download;
the site is built offline, so tests/tooling/run-docs.sh writes this small one
instead and the links still point at the real pages.

Usage: python ansible_inventory.py OUTPUT_FILE
"""

import sys
import zlib

# label -> (page, anchor, title) below ANSIBLE_DOCS_URL.
ANSIBLE_DOCS_URL = 'https://docs.ansible.com/ansible/latest/'
LABELS = {
    'common_return_values': ('reference_appendices/common_return_values.html', 'common-return-values', 'Return Values'),
    'ansible_configuration_settings': ('reference_appendices/config.html', 'ansible-configuration-settings',
                                       'Ansible Configuration Settings'),
    # The modules' "action" attribute (they have action plugins).
    'action_plugins': ('plugins/action.html', 'action-plugins', 'Action plugins'),
}


def inventory_bytes() -> bytes:
    """Return an intersphinx (Sphinx inventory version 2) file holding LABELS as std:label entries."""
    header = (
        '# Sphinx inventory version 2\n'
        '# Project: Ansible\n'
        '# Version: latest\n'
        '# The remainder of this file is compressed using zlib.\n'
    ).encode('utf-8')
    lines = ''.join(f'{label} std:label -1 {page}#{anchor} {title}\n'
                    for label, (page, anchor, title) in sorted(LABELS.items()))
    return header + zlib.compress(lines.encode('utf-8'))


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__.rsplit('Usage: ', 1)[1].strip())
    with open(sys.argv[1], 'wb') as output:
        output.write(inventory_bytes())
    return 0


if __name__ == '__main__':
    sys.exit(main())
