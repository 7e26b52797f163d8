"""Write the intersphinx inventory of the few docs.ansible.com pages the docs site links to.

antsibull-docs' pages refer to a few pages of the Ansible documentation by
label (common_return_values, ansible_configuration_settings, action_plugins, callback_plugins) and
the environment variables of ansible-core's configuration (the stdout callback's options). Sphinx resolves
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
    # The quiet stdout callback's page.
    'callback_plugins': ('plugins/callback.html', 'callback-plugins', 'Callback plugins'),
}
# Environment variables the quiet callback's options (from ansible-core's
# default_callback and result_format_callback fragments) refer to.
ENVVARS = ('ANSIBLE_CALLBACK_FORMAT_PRETTY', 'ANSIBLE_CALLBACK_RESULT_FORMAT', 'ANSIBLE_CHECK_MODE_MARKERS',
           'ANSIBLE_DISPLAY_FAILED_STDERR', 'ANSIBLE_DISPLAY_OK_HOSTS', 'ANSIBLE_DISPLAY_SKIPPED_HOSTS',
           'ANSIBLE_SHOW_CUSTOM_STATS', 'ANSIBLE_SHOW_PER_HOST_START', 'ANSIBLE_SHOW_TASK_PATH_ON_FAILURE')


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
    lines += ''.join(f'{name} std:envvar -1 reference_appendices/config.html#envvar-{name} -\n' for name in ENVVARS)
    return header + zlib.compress(lines.encode('utf-8'))


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__.rsplit('Usage: ', 1)[1].strip())
    with open(sys.argv[1], 'wb') as output:
        output.write(inventory_bytes())
    return 0


if __name__ == '__main__':
    sys.exit(main())
