"""A stand-in for systemctl, for testing what the role asks of systemd where systemd is not the service manager.

systemd is not PID 1 on the machines the tests run on, so the role's systemd path (daemon-reload, start, enable,
the restart and reload handlers, stop and disable on removal) cannot meet the real manager there. This program
answers the calls ansible.builtin.systemd_service makes the way systemctl does, for one unit, and keeps what a
manager would know in a JSON state file:

- the unit definition systemd has loaded (the unit file as it was at the last daemon-reload);
- whether the unit is enabled and whether it is active;
- what the running service started with: that loaded definition, the program's files, its configuration and its
  secret headers (a credential, read at start only); a reload re-reads the configuration only;
- every call, in order.

Everything it tracks is named by the JSON file in the FAKE_SYSTEMCTL environment variable:
{"state": path, "unit": name, "unit_file": path, "program": [paths], "config": path, "headers": path}, and
"fail": [verbs] makes those verbs fail as systemctl does when the service's process exits at once.

`systemctl_stand_in.py --report` prints the state and what is installed now, for the test to compare.
"""

import hashlib
import json
import os
import sys


def load_settings():
    with open(os.environ['FAKE_SYSTEMCTL'], encoding='utf-8') as handle:
        return json.load(handle)


def digest_of(path):
    """A digest of a file, of every file under a folder (names included), or None for nothing there."""
    if not os.path.lexists(path):
        return None
    digest = hashlib.sha256()
    if os.path.isdir(path):
        for folder, folders, files in os.walk(path):
            folders.sort()
            for name in sorted(files):
                file_path = os.path.join(folder, name)
                digest.update(os.path.relpath(file_path, path).encode() + b'\0')
                with open(file_path, 'rb') as handle:
                    digest.update(handle.read())
    else:
        with open(path, 'rb') as handle:
            digest.update(handle.read())
    return digest.hexdigest()


def installed(settings):
    """What a service started now would run of the files on disk (the unit comes from what systemd loaded)."""
    return {'program': [digest_of(path) for path in settings['program']],
            'config': digest_of(settings['config']),
            'headers': digest_of(settings['headers'])}


def read_state(settings):
    if not os.path.exists(settings['state']):
        return {'loaded_unit': None, 'enabled': False, 'active': False, 'running': None, 'calls': []}
    with open(settings['state'], encoding='utf-8') as handle:
        return json.load(handle)


def write_state(settings, state):
    staged = settings['state'] + '.new'
    with open(staged, 'w', encoding='utf-8') as handle:
        json.dump(state, handle, indent=1, sort_keys=True)
    os.replace(staged, settings['state'])


def show(settings, state):
    loaded = state['loaded_unit'] is not None
    properties = {
        'Id': settings['unit'] + '.service',
        'LoadState': 'loaded' if loaded else 'not-found',
        'ActiveState': 'active' if state['active'] else 'inactive',
        'SubState': 'running' if state['active'] else 'dead',
        'UnitFileState': ('enabled' if state['enabled'] else 'disabled') if loaded else '',
        'NeedDaemonReload': 'yes' if loaded and digest_of(settings['unit_file']) != state['loaded_unit'] else 'no',
    }
    return 0, ''.join('%s=%s\n' % item for item in properties.items()), ''


def start(settings, state):
    state['running'] = dict(installed(settings), unit=state['loaded_unit'])
    state['active'] = True


def act(settings, state, verb):
    """One unit verb, as systemctl answers it: (exit status, stdout, stderr)."""
    known = state['loaded_unit'] is not None
    name = settings['unit'] + '.service'
    if verb in ('is-enabled', 'list-unit-files'):
        if not known and not os.path.exists(settings['unit_file']):
            return 1, '', 'Failed to get unit file state for %s: No such file or directory\n' % name
        if verb == 'list-unit-files':
            return 0, '%s %s\n' % (name, 'enabled' if state['enabled'] else 'disabled'), ''
        return (0, 'enabled\n', '') if state['enabled'] else (1, 'disabled\n', '')
    if verb in ('enable', 'disable'):
        if not os.path.exists(settings['unit_file']):
            return 1, '', 'Failed to %s unit: Unit file %s does not exist.\n' % (verb, name)
        state['enabled'] = verb == 'enable'
        return 0, '', ''
    if verb == 'stop':
        state['active'] = False
        state['running'] = None
        return 0, '', ''
    if not known:
        return 5, '', 'Failed to %s %s: Unit %s not found.\n' % (verb, name, name)
    if verb in settings.get('fail', ()):
        state['active'] = False
        state['running'] = None
        return 1, '', ('Job for %s failed because the control process exited with error code.\nSee "systemctl status '
                       '%s" and "journalctl -xeu %s" for details.\n' % (name, name, name))
    if verb in ('start', 'restart'):
        if verb == 'restart' or not state['active']:
            start(settings, state)
        return 0, '', ''
    if verb == 'reload':
        if not state['active']:
            return 1, '', 'Failed to reload %s: Job type reload is not applicable for unit %s.\n' % (name, name)
        state['running']['config'] = digest_of(settings['config'])
        return 0, '', ''
    return 1, '', 'Unknown command verb %s.\n' % verb


def main(argv):
    settings = load_settings()
    state = read_state(settings)
    if argv == ['--report']:
        sys.stdout.write(json.dumps({'state': state, 'installed': dict(installed(settings),
                                                                       unit=digest_of(settings['unit_file']))}))
        return 0
    words = [word for word in argv if not word.startswith('-')]
    state['calls'].append(words)
    if words == ['daemon-reload']:
        state['loaded_unit'] = digest_of(settings['unit_file'])
        if state['loaded_unit'] is None:
            state['enabled'] = False
        status, out, err = 0, '', ''
    elif len(words) == 2 and words[1] in (settings['unit'], settings['unit'] + '.service'):
        if words[0] == 'show':
            status, out, err = show(settings, state)
        else:
            status, out, err = act(settings, state, words[0])
    else:
        status, out, err = 1, '', 'this stand-in knows only the unit %s: %s\n' % (settings['unit'], ' '.join(argv))
    write_state(settings, state)
    sys.stdout.write(out)
    sys.stderr.write(err)
    return status


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
