# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""make_ansible_test_key_pair (tests/tooling/common.sh): ansible-test's SSH key pair, made once before any stage.

Two ansible-test runs that each found no key pair both ran ssh-keygen, and the second failed (it asks before
overwriting): a fresh-clone CI lost its integration stage that way when two integration stages started together.
"""

import os
import subprocess

TOOLING = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMON_SH = os.path.join(TOOLING, 'common.sh')


def start_making(home):
    env = dict(os.environ, HOME=str(home))
    return subprocess.Popen(['bash', '-c', 'set -euo pipefail; source "$1"; make_ansible_test_key_pair', 'test',
                             COMMON_SH], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_two_bootstraps_at_once_make_one_key_pair_that_ansible_test_takes_as_it_is(tmp_path):
    makers = [start_making(tmp_path), start_making(tmp_path)]
    outputs = [maker.communicate(timeout=60)[0] for maker in makers]
    assert [maker.returncode for maker in makers] == [0, 0], outputs
    assert sum('made in' in output for output in outputs) == 1, outputs
    folder = tmp_path / '.ansible' / 'test'
    key = (folder / 'id_rsa').read_text(encoding='utf-8')
    # ansible-test uses a pair it finds (both files), and writes the RSA header itself, which paramiko reads.
    assert key.startswith('-----BEGIN RSA PRIVATE KEY-----') and (folder / 'id_rsa.pub').read_text().startswith('ssh-rsa ')
    again = start_making(tmp_path)
    assert again.communicate(timeout=60)[0] == '' and again.returncode == 0
    assert (folder / 'id_rsa').read_text(encoding='utf-8') == key


def test_a_half_made_pair_is_made_again(tmp_path):
    folder = tmp_path / '.ansible' / 'test'
    folder.mkdir(parents=True)
    (folder / 'id_rsa').write_text('left by an interrupted run', encoding='utf-8')
    maker = start_making(tmp_path)
    output = maker.communicate(timeout=60)[0]
    assert maker.returncode == 0 and 'made in' in output, output
    assert (folder / 'id_rsa.pub').exists()
    assert (folder / 'id_rsa').read_text(encoding='utf-8').startswith('-----BEGIN RSA PRIVATE KEY-----')
