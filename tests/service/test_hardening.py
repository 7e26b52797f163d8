# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The daemon process against bad input, lost state, idle clients, runaway hooks and redirecting receivers."""

import json
import os
import signal
import socket
import sys
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from service_harness import approvals_of, wait_until
from imds_simulator.process import unused_port  # on the path: service_harness puts it there

# Upper bound of any wait on the daemon here; a regression fails instead of hanging.
LIMIT_SECONDS = 30


def _no_traceback(text):
    return 'Traceback' not in text


# -- item 6: every input validated once, at the edge -------------------------

@pytest.mark.parametrize('key, value, message', [
    ('timeout', 1e12, 'timeout must be from 0.1 to 300 seconds'),
    ('poll_interval', 1e12, 'poll_interval must be from 0.25 to 60 seconds'),
    ('timeout', float('inf'), 'Infinity is not a JSON number'),
    ('hook_timeout', float('nan'), 'NaN is not a JSON number'),
])
def test_absurd_durations_are_refused_by_check_and_at_start(simulator, daemon, key, value, message):
    daemon.write_config(**{key: value})  # json writes inf and nan as Infinity and NaN
    checked = daemon.run_command('--check')
    assert checked.returncode == 2 and message in checked.stderr and _no_traceback(checked.stderr), checked.stderr
    started = daemon.run_command(timeout=LIMIT_SECONDS)
    assert started.returncode == 2 and 'not starting' in started.stderr and message in started.stderr
    assert _no_traceback(started.stderr)


def test_a_metrics_port_in_use_is_refused_by_check_and_at_start(simulator, daemon):
    holder = socket.socket()
    holder.bind(('127.0.0.1', 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        daemon.add_hook('prepare', '10-record')
        daemon.write_config(metrics={'listen': '127.0.0.1:%d' % port})
        checked = daemon.run_command('--check')
        assert checked.returncode == 2 and 'already in use by another program' in checked.stderr, checked.stderr
        simulator.create_event('Freeze', ['WestNO_0'])
        started = daemon.run_command(timeout=LIMIT_SECONDS)
        assert started.returncode == 2, started.stderr
        assert 'not starting: metrics.listen 127.0.0.1:%d is already in use' % port in started.stderr
        assert _no_traceback(started.stderr) and daemon.records() == []
    finally:
        holder.close()


def test_a_reload_to_a_metrics_port_in_use_is_refused_and_the_service_goes_on(simulator, daemon):
    port = unused_port()
    daemon.add_hook('prepare', '10-record')
    daemon.write_config(metrics={'listen': '127.0.0.1:%d' % port})
    daemon.start()
    holder = socket.socket()
    holder.bind(('127.0.0.1', 0))
    holder.listen(1)
    try:
        daemon.write_config(metrics={'listen': '127.0.0.1:%d' % holder.getsockname()[1]})
        daemon.send_signal(signal.SIGHUP)
        wait_until(lambda: daemon.log_contains('reload refused'), LIMIT_SECONDS, what='reload refused')
        assert 'already in use by another program' in daemon.log_text()
        event_id = simulator.create_event('Freeze', ['WestNO_0'])
        daemon.wait_for_hooks(event_id, ['prepare/10-record'])
        assert 'polls_total' in _scrape(port)
        assert daemon.stop() == 0
    finally:
        holder.close()


def test_a_state_file_of_the_wrong_shape_is_set_aside(simulator, daemon):
    daemon.add_hook('prepare', '10-only')
    daemon.write_config()
    os.makedirs(os.path.dirname(daemon.state_file))
    with open(daemon.state_file, 'w') as handle:
        json.dump({'version': 1, 'events': {'x': {}}, 'event_order': ['x']}, handle)
    daemon.start()
    event_id = simulator.create_event('Freeze', ['WestNO_0'])
    daemon.wait_for_hooks(event_id, ['prepare/10-only'])
    assert daemon.stop() == 0
    assert 'has the wrong shape' in daemon.log_text() and _no_traceback(daemon.log_text())
    assert [name for name in os.listdir(os.path.dirname(daemon.state_file)) if '.corrupt.' in name]
    assert list(daemon.state()['events']) == [event_id.lower()]


# -- items 7 and 8: the state directory -------------------------------------

def test_an_unusable_state_directory_refuses_the_start(simulator, daemon):
    daemon.add_hook('prepare', '10-record')
    blocker = os.path.join(daemon.base_dir, 'not-a-directory')
    with open(blocker, 'w'):
        pass
    daemon.write_config(state_file=os.path.join(blocker, 'state.json'))
    simulator.create_event('Freeze', ['WestNO_0'])
    started = daemon.run_command(timeout=LIMIT_SECONDS)
    assert started.returncode == 2, started.stderr
    assert 'not starting: cannot write the state file' in started.stderr and 'would run hooks again' in started.stderr
    assert daemon.records() == []


def _metric(path, name):
    """The value of an unlabelled metric in the textfile at ``path`` (None while absent)."""
    try:
        with open(path) as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    values = [float(line.split()[-1]) for line in lines if line.startswith(name + ' ')]
    return values[0] if values else None


def test_a_state_lost_while_running_degrades_loudly_once_and_recovers(simulator, daemon):
    textfile = os.path.join(daemon.base_dir, 'metrics.prom')
    daemon.write_config(metrics={'textfile': textfile, 'textfile_interval': 1})
    daemon.start()
    wait_until(lambda: os.path.exists(daemon.state_file), LIMIT_SECONDS, what='first save')
    state_dir = os.path.dirname(daemon.state_file)
    os.rename(state_dir, state_dir + '.moved')
    with open(state_dir, 'w'):
        pass  # a file where the directory was: nothing can be saved any more
    simulator.create_event('Freeze', ['WestNO_0'])
    # Every pass of the loop tries again (the state stays unsaved), and says nothing more.
    wait_until(lambda: (_metric(textfile, 'scheduled_events_service_state_save_errors_total') or 0) >= 3,
               LIMIT_SECONDS, what='repeated save failures in the metrics')
    assert _metric(textfile, 'scheduled_events_service_state_save_failing') == 1
    loud = [entry for entry in daemon.log_entries()
            if entry['level'] == 'error' and 'cannot write the state file' in entry['message']]
    assert len(loud) == 1 and 'keeps running' in loud[0]['message'], loud
    # Saving works again: said once, the metric goes back to 0, the state holds what happened meanwhile.
    os.unlink(state_dir)
    os.rename(state_dir + '.moved', state_dir)
    second = simulator.create_event('Reboot', ['WestNO_0'])
    wait_until(lambda: daemon.log_contains('saved to %s again' % daemon.state_file), LIMIT_SECONDS, what='recovery')
    wait_until(lambda: second.lower() in daemon.state()['events'], LIMIT_SECONDS, what='state saved again')
    wait_until(lambda: _metric(textfile, 'scheduled_events_service_state_save_failing') == 0, LIMIT_SECONDS,
               what='metric back to 0')
    assert daemon.stop() == 0
    stopped = [entry for entry in daemon.log_entries() if entry['message'].startswith('stopped')]
    assert stopped[-1]['level'] == 'info' and 'state saved' in stopped[-1]['message']


def test_a_state_lost_until_the_stop_is_not_reported_as_saved(simulator, daemon):
    daemon.write_config()
    daemon.start()
    wait_until(lambda: os.path.exists(daemon.state_file), LIMIT_SECONDS, what='first save')
    state_dir = os.path.dirname(daemon.state_file)
    os.rename(state_dir, state_dir + '.moved')
    with open(state_dir, 'w'):
        pass
    simulator.create_event('Freeze', ['WestNO_0'])
    wait_until(lambda: daemon.log_contains('cannot write the state file'), LIMIT_SECONDS, what='save error')
    assert daemon.stop() == 0
    stopped = [entry for entry in daemon.log_entries() if entry['message'].startswith('stopped')]
    assert stopped[-1]['level'] == 'error' and 'could NOT be saved' in stopped[-1]['message']


def test_temporaries_of_a_killed_save_are_removed_at_start(simulator, daemon):
    daemon.write_config()
    state_dir = os.path.dirname(daemon.state_file)
    os.makedirs(state_dir)
    for name in ('.state.k1l2l3', '.state.json.a1b2.tmp'):
        with open(os.path.join(state_dir, name), 'w') as handle:
            handle.write('{"half')
    daemon.start()
    assert daemon.log_contains('removed 2 temporary file(s) an interrupted save left')
    assert daemon.stop() == 0
    assert sorted(os.listdir(state_dir)) == ['state.json']


# -- item 11: an idle metrics client wedges nothing ---------------------------

def _scrape(port):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open('http://127.0.0.1:%d/metrics' % port, timeout=10) as response:
        return response.read().decode('utf-8')


def test_an_idle_metrics_connection_stalls_neither_polling_nor_reload_nor_stop(simulator, daemon):
    port = unused_port()
    daemon.add_hook('prepare', '10-record')
    daemon.write_config(metrics={'listen': '127.0.0.1:%d' % port})
    daemon.start()
    idle = socket.create_connection(('127.0.0.1', port), timeout=LIMIT_SECONDS)
    try:
        event_id = simulator.create_event('Freeze', ['WestNO_0'])
        wait_until(lambda: 'scheduled_events_service_hooks_run_total{phase="prepare"} 1' in _scrape(port), LIMIT_SECONDS,
                   what='the hook counted')
        new_port = unused_port()
        daemon.write_config(metrics={'listen': '127.0.0.1:%d' % new_port})
        daemon.send_signal(signal.SIGHUP)
        wait_until(lambda: daemon.log_contains('configuration reloaded'), LIMIT_SECONDS, what='reload')
        assert 'polls_total' in _scrape(new_port)
        second = simulator.create_event('Freeze', ['WestNO_0'])
        daemon.wait_for_hooks(second, ['prepare/10-record'])
        assert daemon.stop(timeout=LIMIT_SECONDS) == 0
    finally:
        idle.close()


# -- item 12: hooks ----------------------------------------------------------

def _python_hook(body):
    return '#!%s\nimport json, os, signal, subprocess, sys, time\n%s\n' % (sys.executable, body)


def _alive(pid):
    try:
        with open('/proc/%d/stat' % pid) as handle:
            return handle.read().split(') ')[-1].split()[0] != 'Z'
    except OSError:
        return False


def test_a_detached_child_of_a_timed_out_hook_is_killed_and_the_next_hook_runs(simulator, daemon):
    pid_file = os.path.join(daemon.base_dir, 'child.pid')
    daemon.add_hook('prepare', '10-detaches', content=_python_hook('''
child = subprocess.Popen([sys.executable, '-c', 'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); '
                          'time.sleep(300)'], start_new_session=True)
with open(%r, 'w') as out:
    out.write(str(child.pid))
time.sleep(300)
''' % pid_file))
    daemon.add_hook('prepare', '20-record')
    daemon.write_config(hook_timeout=2)
    daemon.start()
    event_id = simulator.create_event('Freeze', ['WestNO_0'])
    daemon.wait_for_hooks(event_id, ['prepare/20-record'], timeout=LIMIT_SECONDS)
    with open(pid_file) as handle:
        child = int(handle.read())
    wait_until(lambda: not _alive(child), LIMIT_SECONDS, what='the detached child killed')
    outcome = daemon.state()['events'][event_id.lower()]['phases']['prepare']['results']['10-detaches']
    assert outcome['outcome'] == 'timeout'
    assert daemon.stop() == 0


def test_a_description_over_128_kib_reaches_the_hooks_and_approval_follows(simulator, daemon):
    daemon.add_hook('prepare', '10-record')
    daemon.write_config(approval={'rules': [{'action': 'approve_after_prepare'}]})
    daemon.start()
    description = 'Planned maintenance. ' * 10000  # about 205 KiB
    event_id = simulator.create_event('Freeze', ['WestNO_0'], description=description)
    daemon.wait_for_hooks(event_id, ['prepare/10-record'])
    record = daemon.records()[0]
    assert record['stdin']['event']['description'] == description
    assert record['env']['SE_TRUNCATED'] == 'SE_DESCRIPTION' and description.startswith(record['env']['SE_DESCRIPTION'])
    wait_until(lambda: approvals_of(simulator, event_id), LIMIT_SECONDS, what='approval')
    assert daemon.stop() == 0


def test_a_link_dropped_after_the_start_to_a_script_in_a_world_writable_folder_is_refused(simulator, daemon):
    daemon.add_hook('prepare', '10-record')
    daemon.write_config()
    daemon.start()
    public = os.path.join(daemon.base_dir, 'public')
    os.mkdir(public)
    os.chmod(public, 0o777)
    marker = os.path.join(daemon.base_dir, 'dropped-ran')
    target = os.path.join(public, 'dropped')
    with open(target, 'w') as handle:
        handle.write(_python_hook('open(%r, "w").close()' % marker))
    os.chmod(target, 0o755)
    os.symlink(target, os.path.join(daemon.hooks_dir, 'prepare', '20-dropped'))
    event_id = simulator.create_event('Freeze', ['WestNO_0'])
    wait_until(lambda: daemon.state()['events'].get(event_id.lower(), {}).get('phases', {}).get('prepare', {})
               .get('finished'), LIMIT_SECONDS, what='prepare finished')
    outcome = daemon.state()['events'][event_id.lower()]['phases']['prepare']['results']['20-dropped']
    assert outcome['outcome'] == 'refused' and public in outcome['message']
    assert not os.path.exists(marker)
    assert daemon.stop() == 0


# -- item 10: the webhook's secrets stay with its origin ---------------------

class _Collector(object):
    """A loopback receiver on a port the kernel chose; ``redirect_to`` makes it answer 307."""

    def __init__(self, redirect_to=None):
        self.requests = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get('Content-Length') or 0))
                collector.requests.append(dict(self.headers))
                if redirect_to:
                    self.send_response(307)
                    self.send_header('Location', redirect_to)
                else:
                    self.send_response(204)
                self.send_header('Content-Length', '0')
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.url = 'http://127.0.0.1:%d/hook' % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={'poll_interval': 0.1})
        self.thread.daemon = True
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize('follow', [False, True])
def test_webhook_secrets_from_a_file_never_follow_a_redirect_to_another_origin(simulator, daemon, follow):
    elsewhere = _Collector()
    origin = _Collector(redirect_to=elsewhere.url)
    try:
        secret = os.path.join(daemon.conf_dir, 'webhook-headers.json')
        with open(secret, 'w') as handle:
            json.dump({'Authorization': 'Bearer s3cret'}, handle)
        os.chmod(secret, 0o600)
        daemon.write_config(webhook={'url': origin.url, 'headers_file': secret, 'retries': 0, 'timeout': 2,
                                     'follow_redirects': follow})
        daemon.start()
        simulator.create_event('Freeze', ['WestNO_0'])
        wait_until(lambda: origin.requests, LIMIT_SECONDS, what='webhook POST')
        assert origin.requests[0]['Authorization'] == 'Bearer s3cret'
        if follow:
            wait_until(lambda: elsewhere.requests, LIMIT_SECONDS, what='redirected POST')
            assert all('Authorization' not in headers for headers in elsewhere.requests)
        else:
            wait_until(lambda: daemon.log_contains('not followed (webhook.follow_redirects is false)'), LIMIT_SECONDS,
                       what='redirect refused')
            assert elsewhere.requests == []
        assert daemon.stop() == 0
        assert 's3cret' not in daemon.log_text()
    finally:
        origin.close()
        elsewhere.close()
