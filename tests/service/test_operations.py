# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Operating the service: --check, --once, signals, metrics, webhook, logs."""

import json
import os
import signal
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from service_harness import approvals_of, unused_loopback_url, wait_until
from imds_simulator.process import unused_port  # on the path: service_harness puts it there


# -- --check -----------------------------------------------------------------

def test_check_accepts_a_sound_configuration(daemon):
    daemon.add_hook('prepare', '10-drain')
    daemon.add_hook('prepare', 'README.disabled', content='not a hook', mode=0o644)
    daemon.write_config(approval={'rules': [{'name': 'users', 'event_sources': ['User'], 'action': 'approve'}]})
    result = daemon.run_command('--check')
    assert result.returncode == 0, result.stderr
    assert 'configuration OK' in result.stdout
    assert 'prepare hooks: 10-drain\n' in result.stdout and 'recover hooks: none' in result.stdout
    assert 'users -> approve' in result.stdout


@pytest.mark.parametrize('breakage, message', [
    (lambda d: os.chmod(d.config_path, 0o666), 'is writable by group and others (mode 0666); run: chmod go-w'),
    (lambda d: os.chmod(d.config_path, 0o664), 'is writable by group (mode 0664)'),
    (lambda d: os.chown(d.config_path, 1000, 1000), 'is owned by uid 1000, not by root; run: chown root:root'),
    (lambda d: os.chmod(d.conf_dir, 0o777), 'directory %(conf)s is writable by group and others'),
    (lambda d: os.chmod(d.add_hook('prepare', '10-open'), 0o757), 'file %(hooks)s/prepare/10-open is writable by others'),
    (lambda d: os.chown(d.add_hook('started', '10-foreign'), 1000, 0), 'file %(hooks)s/started/10-foreign is owned by uid 1000'),
    (lambda d: os.chmod(d.add_hook('recover', '10-plain'), 0o644), 'hook %(hooks)s/recover/10-plain is not executable'),
    (lambda d: os.chmod(os.path.join(d.hooks_dir, 'prepare'), 0o775), 'directory %(hooks)s/prepare is writable by group'),
    (lambda d: os.mkdir(os.path.join(d.hooks_dir, 'prepare', '10-dir')), '%(hooks)s/prepare/10-dir is not a regular file'),
])
def test_check_refuses_insecure_files_precisely(daemon, breakage, message):
    if os.geteuid() != 0 and 'uid 1000' in message:
        pytest.skip('changing owners needs root')
    daemon.write_config()
    breakage(daemon)
    result = daemon.run_command('--check')
    assert result.returncode == 2
    assert message % {'conf': daemon.conf_dir, 'hooks': daemon.hooks_dir} in result.stderr, result.stderr
    assert result.stderr.startswith('ERROR: ')


@pytest.mark.parametrize('overrides, message', [
    ({'poll_interval': 0.1}, 'IMDS would throttle the VM'),
    ({'api_version': 'latest'}, "api_version 'latest' is not of the form YYYY-MM-DD"),
    ({'endpoint': 'ftp://x'}, 'is not an http:// URL'),
    ({'hooks_dir': 'relative/hooks'}, 'hooks_dir must be an absolute path'),
    ({'metrics': {'listen': '0.0.0.0:9839'}}, 'is not a loopback address'),
    ({'metrics': {'textfile': '/tmp/x.txt'}}, 'must end in .prom'),
    ({'webhook': {'url': 'file:///etc/passwd'}}, 'webhook.url must be an http:// or https:// URL'),
    ({'approval': {'rules': [{'event_types': ['Freez'], 'action': 'approve'}]}},
     "approval rule 1: event_types contains 'Freez'; use one of Freeze, Reboot"),
    ({'approval': {'rules': [{'action': 'sometimes'}]}}, "action is 'sometimes'; use one of approve, approve_after_prepare, never"),
    ({'approval': {'rules': [{'action': 'approve', 'max_duration_seconds': -1}]}}, 'max_duration_seconds must be a whole number'),
    ({'pol_interval': 1}, 'unknown key(s) pol_interval'),
    ({'log': {'format': 'xml'}}, 'log.format must be one of auto, journal, json, text'),
])
def test_check_refuses_bad_settings_precisely(daemon, overrides, message):
    daemon.write_config(**overrides)
    result = daemon.run_command('--check')
    assert result.returncode == 2
    assert message in result.stderr, result.stderr


def test_check_reports_invalid_json(daemon):
    with open(daemon.config_path, 'w') as handle:
        handle.write('{"poll_interval": ')
    os.chmod(daemon.config_path, 0o644)
    result = daemon.run_command('--check')
    assert result.returncode == 2 and 'is not valid JSON' in result.stderr


# -- --once ------------------------------------------------------------------

def test_once_prints_what_it_would_do_and_does_nothing(simulator, daemon):
    daemon.add_hook('prepare', '10-drain')
    daemon.write_config(approval={'rules': [{'event_types': ['Freeze'], 'action': 'approve_after_prepare'},
                                            {'event_sources': ['User'], 'action': 'approve'}]})
    freeze = simulator.create_event('Freeze', ['WestNO_0', 'WestNO_1'])
    reboot = simulator.create_event('Reboot', ['WestNO_1'])
    result = daemon.run_command('--once')
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan['resource_name'] == 'WestNO_0' and plan['identity_source'] == 'imds'
    by_id = dict((entry['event']['event_id'], entry) for entry in plan['events'])
    assert by_id[freeze]['hooks_due'] == [{'phase': 'prepare', 'hooks': ['10-drain']}]
    assert by_id[freeze]['approval']['decision'] == 'approve' and by_id[freeze]['approval']['rule'] == '#1'
    assert by_id[reboot]['hooks_due'] == [] and by_id[reboot]['approval']['decision'] == 'skip'
    assert [change['kind'] for change in plan['changes']] == ['new', 'new']
    assert plan['document']['DocumentIncarnation'] == plan['document_incarnation']
    assert simulator.approvals() == []
    assert daemon.records() == []
    assert not os.path.exists(daemon.state_file)


def test_once_says_unknown_while_the_vm_name_is_unknown(simulator, daemon):
    simulator.add_fault('status', vm='WestNO_0', path='compute', status=500, count=100000)
    daemon.write_config(approval={'rules': [{'action': 'approve'}]})
    event_id = simulator.create_event('Freeze', ['WestNO_0'])
    result = daemon.run_command('--once')
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan['resource_name'] is None and plan['identity_source'] is None
    [entry] = plan['events']
    assert entry['event']['event_id'] == event_id
    # Possibly this VM's: null, never false; and no approval before the name is known.
    assert entry['event']['affects_this_vm'] is None and entry['event']['is_leader'] is None
    assert entry['approval']['decision'] != 'approve'
    assert "this VM's name is not known yet" in result.stderr


def test_once_fails_clearly_when_imds_is_unreachable(daemon):
    endpoint = unused_loopback_url()
    daemon.write_config(endpoint=endpoint, resource_name='vm0')
    result = daemon.run_command('--once')
    assert result.returncode == 1
    assert 'IMDS unreachable at %s' % endpoint.rsplit('/metadata', 1)[0] in result.stderr


# -- signals -----------------------------------------------------------------

def test_sigterm_lets_the_running_hook_finish_and_saves_state(simulator, daemon):
    daemon.add_hook('prepare', '10-slow', sleep_seconds=2)
    daemon.add_hook('prepare', '20-later')
    daemon.write_config(approval={'rules': [], 'default_action': 'never'})
    daemon.start()
    event_id = simulator.create_event('Freeze', ['WestNO_0'])
    daemon.wait_for_hooks(event_id, ['prepare/10-slow'])
    began = time.monotonic()
    assert daemon.stop(signal.SIGTERM) == 0
    assert time.monotonic() - began >= 1.0
    assert [record['hook'] for record in daemon.records('end')] == ['prepare/10-slow']
    # The log says which hook the stop waits for.
    said = stop_messages(daemon)
    assert len(said) == 1 and said[0].startswith('stopping: waiting for the running prepare hook 10-slow for %s '
                                                 'to end (at most ' % event_id), said
    phase = daemon.state()['events'][event_id.lower()]['phases']['prepare']
    assert phase['results']['10-slow']['outcome'] == 'ok' and '20-later' not in phase['results']
    assert not phase['finished']
    # The rest of the phase runs after the restart; the finished hook does not run again.
    daemon.start()
    daemon.wait_for_hooks(event_id, ['prepare/10-slow', 'prepare/20-later'])
    # Every hook has ended: a stop waits for none, and says so.
    wait_until(lambda: daemon.state()['events'][event_id.lower()]['phases']['prepare'].get('finished'), 15,
               what='the prepare phase to end')
    assert daemon.stop() == 0
    assert daemon.hook_calls(event_id) == ['prepare/10-slow', 'prepare/20-later']
    assert stop_messages(daemon)[1:] == ['stopping: no hook is running']


def stop_messages(daemon):
    return [entry['message'] for entry in daemon.log_entries() if entry.get('message', '').startswith('stopping')]


def test_sigterm_times_out_a_hook_that_does_not_end(simulator, daemon):
    daemon.add_hook('prepare', '10-stuck', sleep_seconds=60)
    daemon.write_config(hook_timeout=2)
    daemon.start()
    event_id = simulator.create_event('Freeze', ['WestNO_0'])
    daemon.wait_for_hooks(event_id, ['prepare/10-stuck'])
    assert daemon.stop(signal.SIGTERM, timeout=20) == 0
    result = daemon.state()['events'][event_id.lower()]['phases']['prepare']['results']['10-stuck']
    assert result['outcome'] == 'timeout'


def test_sighup_reloads_the_configuration_and_keeps_it_when_broken(simulator, daemon):
    daemon.write_config(approval={'rules': [], 'default_action': 'never'})
    daemon.start()
    ignored = simulator.create_event('Freeze', ['WestNO_0'])
    wait_until(lambda: [e for e in daemon.log_entries() if e.get('decision') == 'skip'], 10, what='skip decision')
    daemon.write_config(approval={'rules': [{'action': 'approve'}]})
    daemon.send_signal(signal.SIGHUP)
    wait_until(lambda: approvals_of(simulator, ignored), 10, what='approval after reload')
    assert daemon.log_contains('configuration reloaded')

    with open(daemon.config_path, 'w') as handle:
        handle.write('{"poll_interval": 0.01}')
    daemon.send_signal(signal.SIGHUP)
    wait_until(lambda: daemon.log_contains('reload refused'), 10, what='refused reload')
    refusal = [e for e in daemon.log_entries() if 'reload refused' in e['message']][0]
    assert 'IMDS would throttle the VM' in refusal['message']
    later = simulator.create_event('Freeze', ['WestNO_0'])
    wait_until(lambda: approvals_of(simulator, later), 10, what='old configuration still in force')
    assert daemon.stop() == 0


# -- metrics -----------------------------------------------------------------

def _scrape(port):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open('http://127.0.0.1:%d/metrics' % port, timeout=5) as response:
        return response.read().decode('utf-8'), response.headers['Content-Type']


def _start_with_metrics_port(daemon, attempts=5, **metrics):
    """Start the daemon serving metrics on a free port; another port if one was taken meanwhile."""
    for dummy in range(attempts):
        port = unused_port()
        daemon.write_config(metrics=dict(metrics, listen='127.0.0.1:%d' % port))
        try:
            daemon.start()
            return port
        except AssertionError:
            if 'Address already in use' not in daemon.log_text():
                raise
            daemon.stop()
    raise AssertionError('no free metrics port in %d attempts' % attempts)


def test_metrics_on_loopback_and_in_a_textfile(simulator, daemon):
    textfile = os.path.join(daemon.base_dir, 'textfile', 'scheduled_events.prom')
    os.makedirs(os.path.dirname(textfile))
    daemon.add_hook('prepare', '10-ok')
    daemon.add_hook('prepare', '20-fails', exit_code=1)
    daemon.write_config(approval={'rules': [{'event_sources': ['User'], 'action': 'approve'}]})
    port = _start_with_metrics_port(daemon, textfile=textfile, textfile_interval=1)
    simulator.create_event('Freeze', ['WestNO_0'])
    wait_until(lambda: 'hooks_failed_total{phase="prepare"} 1' in _scrape(port)[0], 15, what='first event metrics')
    simulator.create_event('Reboot', ['WestNO_0', 'WestNO_1'], event_source='User')
    wait_until(lambda: 'hooks_failed_total{phase="prepare"} 2' in _scrape(port)[0]
               and 'approvals_total 1' in _scrape(port)[0], 15, what='metrics')
    text, content_type = _scrape(port)
    assert content_type.startswith('text/plain; version=0.0.4')
    for line in ('scheduled_events_service_events_seen_total{affects_this_vm="true",event_status="Scheduled",'
                 'event_type="Freeze"} 1',
                 'scheduled_events_service_events_seen_total{affects_this_vm="true",event_status="Scheduled",'
                 'event_type="Reboot"} 1',
                 'scheduled_events_service_hooks_run_total{phase="prepare"} 4',
                 'scheduled_events_service_approvals_total 1',
                 'scheduled_events_service_pending_events{affects_this_vm="true"} 2',
                 '# TYPE scheduled_events_service_poll_duration_seconds histogram'):
        assert line in text.splitlines(), line
    assert 'scheduled_events_service_poll_duration_seconds_count' in text
    wait_until(lambda: os.path.exists(textfile) and 'approvals_total 1' in open(textfile).read(), 10,
               what='textfile')
    assert listening_sockets(daemon.process.pid) == [('127.0.0.1', port)]
    assert daemon.stop() == 0
    assert oct(os.stat(textfile).st_mode & 0o777) == '0o644'


def test_no_listening_socket_without_metrics(simulator, daemon):
    daemon.start()
    simulator.create_event('Freeze', ['WestNO_0'])
    wait_until(lambda: [e for e in daemon.log_entries() if e.get('kind') == 'new'], 10, what='event seen')
    assert listening_sockets(daemon.process.pid) == []
    assert daemon.stop() == 0


def _socket_inodes(pid):
    inodes = set()
    for name in os.listdir('/proc/%d/fd' % pid):
        try:
            target = os.readlink('/proc/%d/fd/%s' % (pid, name))
        except OSError:
            continue
        if target.startswith('socket:['):
            inodes.add(target[8:-1])
    return inodes


def listening_sockets(pid):
    """``(address, port)`` of every TCP socket ``pid`` listens on, from /proc/net."""
    inodes = _socket_inodes(pid)
    found = []
    for table in ('/proc/net/tcp', '/proc/net/tcp6'):
        with open(table) as handle:
            for line in list(handle)[1:]:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state != '0A' or inode not in inodes:
                    continue
                address, port = local.split(':')
                if len(address) == 8:
                    address = '.'.join(str(int(address[i:i + 2], 16)) for i in (6, 4, 2, 0))
                found.append((address, int(port, 16)))
    return found


# -- webhook, event log, logs -------------------------------------------------

class _Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers['Content-Length']))
        server = self.server
        server.attempts += 1
        if server.attempts == 1:
            self.send_response(503)
            self.send_header('Content-Length', '0')
            self.end_headers()
            return
        server.received.append((dict(self.headers), json.loads(body.decode('utf-8'))))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def webhook_receiver():
    server = HTTPServer(('127.0.0.1', 0), _Receiver)
    server.attempts = 0
    server.received = []
    thread = threading.Thread(target=server.serve_forever, kwargs={'poll_interval': 0.1})
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def test_webhook_and_event_log_hear_about_events(simulator, daemon, webhook_receiver):
    event_log = os.path.join(daemon.base_dir, 'log', 'events.jsonl')
    daemon.add_hook('prepare', '10-fails', exit_code=2)
    daemon.write_config(event_log=event_log, approval={'rules': [{'action': 'approve'}]},
                        webhook={'url': 'http://127.0.0.1:%d/hook' % webhook_receiver.server_port,
                                 'headers': {'Authorization': 'Bearer s3cret'}, 'retries': 2, 'timeout': 2})
    daemon.start()
    event_id = simulator.create_event('Freeze', ['WestNO_0'])
    wanted = set(['new', 'approved', 'hook_failed', 'started'])
    wait_until(lambda: wanted <= set(body['kind'] for dummy, body in webhook_receiver.received), 20,
               what='webhook notifications')
    headers, body = [(h, b) for h, b in webhook_receiver.received if b['kind'] == 'new'][0]
    assert headers['Authorization'] == 'Bearer s3cret' and headers['Content-Type'] == 'application/json'
    assert body['event_id'] == event_id and body['resource_name'] == 'WestNO_0'
    assert body['event']['event_type'] == 'Freeze' and body['source'] == 'azure_maintenance.scheduled_events.service'
    # The first POST got a 503 and was retried.
    assert webhook_receiver.attempts == len(webhook_receiver.received) + 1
    assert daemon.stop() == 0
    with open(event_log) as handle:
        records = [json.loads(line) for line in handle]
    kinds = [record['kind'] for record in records]
    assert kinds[0] == 'new'
    assert wanted <= set(kinds)
    failure = [record for record in records if record['kind'] == 'hook_failed'][0]
    assert failure['exit_code'] == 2 and failure['phase'] == 'prepare' and failure['hook'] == '10-fails'


def test_json_log_lines_carry_structured_fields(simulator, daemon):
    daemon.start()
    event_id = simulator.create_event('Freeze', ['WestNO_0'])
    entry = wait_until(lambda: [e for e in daemon.log_entries() if e.get('kind') == 'new'], 10, what='log')[0]
    assert entry['level'] == 'info' and entry['event_id'] == event_id and entry['event_type'] == 'Freeze'
    assert entry['time'].endswith('Z')
    assert daemon.stop() == 0
    for line in daemon.log_text().splitlines():
        json.loads(line)


def test_text_log_and_proxy_variables_that_never_matter(simulator, daemon):
    daemon.write_config(log={'format': 'text', 'level': 'info'})
    # Proxy variables must never matter: IMDS is reached directly.
    daemon.start(env={'HTTP_PROXY': 'http://127.0.0.1:9', 'http_proxy': 'http://127.0.0.1:9', 'NO_PROXY': ''})
    event_id = simulator.create_event('Freeze', ['WestNO_0'])
    wait_until(lambda: daemon.log_contains('event new: %s' % event_id), 10, what='text log')
    assert daemon.stop() == 0
