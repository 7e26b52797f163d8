# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of the EDA event source, with a list-backed queue and a scripted IMDS transport.

Kept under tests/unit so that ``make units`` runs them; the rulebook runs
against a real ansible-rulebook stay in tests/eda.
"""

import asyncio
import contextlib
import copy
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest
import yaml

from eda_source_layout import COLLECTION_ROOT, SOURCE_RELATIVE_PATH, load_fixture, make_collections_dir

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_client import ImdsClient
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_errors import (
    ImdsHttpError,
    ImdsUnreachableError,
    InvalidParameterError,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_retry import RetryPolicy
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_transport import HttpResponse

ENDPOINT = 'http://127.0.0.1:18581/metadata/scheduledevents'
FREEZE_ID = 'C7061BAC-AFDC-4513-B24B-AA5F13A16123'
USER_REBOOT_ID = 'f020ba2e-3bc0-4c40-a10b-86575a9eabd5'
HARDWARE_FAILURE_ID = '5B2D1C3A-0F4E-4D6B-9A8C-7E1F2A3B4C5D'
# Every test that runs the source ends within this many seconds or fails.
RUN_LIMIT_SECONDS = 10.0


class ListQueue(object):
    """The one method of asyncio.Queue a source uses, backed by a list."""

    def __init__(self):
        self.items = []

    async def put(self, item):
        self.items.append(item)


def document(fixture, incarnation=None):
    doc = load_fixture(fixture)
    if incarnation is not None:
        doc['DocumentIncarnation'] = incarnation
    return doc


def json_response(payload, status=200):
    return HttpResponse(status, {'content-type': 'application/json'}, json.dumps(payload).encode('utf-8'))


class ScriptedImds(object):
    """A transport answering each scheduledevents GET with the next step of a script.

    A step is a document (dict), an HTTP status (int), ``'malformed'`` or
    ``'refused'``. Once the script is used up the last document is repeated
    and ``exhausted`` is set, so a test knows every step was seen.
    """

    def __init__(self, steps, compute=None):
        self.steps = list(steps)
        self.compute = compute if compute is not None else load_fixture('compute.json')
        self.requests = []
        self.exhausted = threading.Event()
        self.closed = 0
        self.last_document = {'DocumentIncarnation': 1, 'Events': []}

    def close(self):
        self.closed += 1

    def request(self, method, url, headers, body=None, connect_timeout=5.0, read_timeout=10.0):
        self.requests.append((method, url, dict(headers)))
        if headers.get('Metadata') != 'true':
            return json_response({'error': 'Bad request. Required metadata header not specified'}, 400)
        if '/metadata/instance/compute' in url:
            compute = self.compute
            if isinstance(compute, list):
                # A script of its own: each lookup takes the next step, the last one stays.
                compute = compute.pop(0) if len(compute) > 1 else compute[0]
            if isinstance(compute, int):
                return json_response({'error': 'compute unavailable'}, compute)
            return json_response(compute)
        if not self.steps:
            self.exhausted.set()
            return json_response(self.last_document)
        step = self.steps.pop(0)
        if isinstance(step, dict):
            self.last_document = step
            return json_response(step)
        if isinstance(step, int):
            return json_response({'error': 'scripted status %d' % step}, step)
        if step == 'malformed':
            return HttpResponse(200, {}, b'{"DocumentIncarnation": 4, "Ev')
        if step == 'refused':
            raise ImdsUnreachableError('could not connect to %s (Connection refused)' % url, url=url)
        raise AssertionError('unknown step %r' % (step,))


def make_client(transport, retries=2):
    return ImdsClient(endpoint=ENDPOINT, transport=transport, retries=retries, sleep=lambda seconds: None,
                      policy=RetryPolicy(retries=retries, random_func=lambda: 0.0))


def run_source(source_module, steps, compute=None, **args):
    """Run the source until the script is used up; return (queue items, transport, source, sleeps)."""
    settings = source_module.parse_args(dict({'endpoint': ENDPOINT}, **args))
    transport = ScriptedImds(steps, compute)
    sleeps = []
    # The poller's clock moves only when the source sleeps, as if each sleep had lasted.
    clock = [1000.0]

    async def instant_sleep(seconds):
        sleeps.append(seconds)
        clock[0] += seconds
        await asyncio.sleep(0)

    source = source_module.ScheduledEventsSource(settings, client=make_client(transport, settings['retries']),
                                                 sleep=instant_sleep, clock=lambda: clock[0])
    queue = ListQueue()

    async def drive():
        task = asyncio.ensure_future(source.run(queue))
        started = time.monotonic()
        while not transport.exhausted.is_set() and not task.done():
            assert time.monotonic() - started < RUN_LIMIT_SECONDS, 'the source did not work through the script in time'
            await asyncio.sleep(0.002)
        if task.done():
            task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(drive())
    return queue.items, transport, source, sleeps


def changes_of(items):
    return [(item['scheduled_event']['change'], item['scheduled_event']['event_id']) for item in items]


# --- arguments -----------------------------------------------------------------------------------------------

def test_defaults(source_module):
    settings = source_module.parse_args({})
    assert settings['endpoint'] == 'http://169.254.169.254/metadata/scheduledevents'
    assert settings['api_version'] == '2020-07-01'
    assert settings['poll_interval'] == 1.0
    assert settings['changes'] == ('new', 'started', 'changed', 'removed')
    assert settings['only_this_vm'] is False
    assert settings['resource_name'] is None
    assert settings['host_map'] == {}


def test_arguments_as_strings_from_templates(source_module):
    settings = source_module.parse_args({'poll_interval': '0.5', 'changes': 'new, removed', 'only_this_vm': 'yes',
                                         'retries': '0', 'eda_feedback_queue': object()})
    assert settings['poll_interval'] == 0.5
    assert settings['changes'] == ('new', 'removed')
    assert settings['only_this_vm'] is True
    assert settings['retries'] == 0


@pytest.mark.parametrize('args, message', [
    ({'poll_interval': 0.1}, 'throttle'),
    ({'poll_interval': 'often'}, 'poll_interval must be a number'),
    ({'changes': ['new', 'completed']}, "'completed' is not one of new, started, changed, removed"),
    ({'changes': []}, 'changes must be a non-empty list'),
    ({'only_this_vm': 'maybe'}, 'only_this_vm must be true or false'),
    ({'host_map': ['WestNO_0']}, 'host_map must be a mapping'),
    ({'host_map': {'WestNO_0': ''}}, "inventory host of 'WestNO_0' must be a non-empty string"),
    ({'poll_intervall': 1}, 'unknown argument(s) poll_intervall'),
])
def test_bad_arguments_are_refused_with_a_reason(source_module, args, message):
    with pytest.raises(InvalidParameterError) as caught:
        source_module.parse_args(args)
    assert message in caught.value.message


def test_main_refuses_a_bad_endpoint_before_polling(source_module):
    with pytest.raises(InvalidParameterError) as caught:
        asyncio.run(source_module.main(ListQueue(), {'endpoint': 'ftp://example.invalid/x'}))
    assert 'is not an http:// URL' in caught.value.message


# --- emitting changes ----------------------------------------------------------------------------------------

def test_lifecycle_emits_new_started_removed_once_each(source_module):
    steps = [document('empty.json'), document('freeze_scheduled.json'), document('freeze_scheduled.json'),
             document('freeze_started.json'), document('freeze_started.json'), document('empty.json', 4)]
    items, transport, source, dummy = run_source(source_module, steps)

    assert changes_of(items) == [('new', FREEZE_ID), ('started', FREEZE_ID), ('removed', FREEZE_ID)]
    new, started, removed = [item['scheduled_event'] for item in items]
    assert new['document_incarnation'] == 2
    assert new['event_status'] == 'Scheduled'
    assert new['not_before_raw'] == 'Mon, 11 Apr 2022 22:26:58 GMT'
    assert new['duration_in_seconds'] == 5
    assert new['event_source'] == 'Platform'
    assert new['resource_name'] == 'WestNO_0'
    assert new['affects_this_vm'] is True
    assert new['is_leader'] is True
    assert new['leader'] == 'WestNO_0'
    assert new['previous'] is None
    assert new['endpoint'] == ENDPOINT
    assert started['document_incarnation'] == 3
    assert started['event_status'] == 'Started'
    assert started['previous']['event_status'] == 'Scheduled'
    assert removed['document_incarnation'] == 4
    assert all(item['meta']['hosts'] == ['WestNO_0', 'WestNO_1'] for item in items)
    # Rulebook engines exchange events as JSON.
    json.dumps(items)
    assert source.resource_name == 'WestNO_0'
    assert any('/metadata/instance/compute' in url for dummy_method, url, dummy_headers in transport.requests)


def test_events_pending_at_start_are_emitted_as_new(source_module):
    items, dummy, dummy_source, dummy_sleeps = run_source(source_module, [document('freeze_scheduled.json')])
    assert changes_of(items) == [('new', FREEZE_ID)]


def test_other_field_changes_are_emitted_as_changed_with_the_previous_version(source_module):
    moved = document('freeze_scheduled.json', 3)
    moved['Events'][0]['NotBefore'] = 'Mon, 11 Apr 2022 22:41:58 GMT'
    items, dummy, dummy_source, dummy_sleeps = run_source(source_module, [document('freeze_scheduled.json'), moved])
    assert changes_of(items) == [('new', FREEZE_ID), ('changed', FREEZE_ID)]
    changed = items[1]['scheduled_event']
    assert changed['not_before_raw'] == 'Mon, 11 Apr 2022 22:41:58 GMT'
    assert changed['previous']['not_before_raw'] == 'Mon, 11 Apr 2022 22:26:58 GMT'


def test_changes_filter(source_module):
    steps = [document('freeze_scheduled.json'), document('freeze_started.json'), document('empty.json', 4)]
    items, dummy, dummy_source, dummy_sleeps = run_source(source_module, steps, changes=['started', 'removed'])
    assert changes_of(items) == [('started', FREEZE_ID), ('removed', FREEZE_ID)]


def test_event_arriving_started_reaches_a_started_only_consumer_once(source_module):
    steps = [document('empty.json'), document('hardware_failure.json'), document('hardware_failure.json')]
    items, dummy, dummy_source, dummy_sleeps = run_source(source_module, steps, changes=['started'])
    assert changes_of(items) == [('new', HARDWARE_FAILURE_ID)]
    assert items[0]['scheduled_event']['event_status'] == 'Started'


def test_only_this_vm_drops_events_of_other_vms(source_module):
    both = document('user_reboot_other_vm.json', 8)
    both['Events'].append(document('freeze_scheduled.json')['Events'][0])
    steps = [document('user_reboot_other_vm.json'), both, document('empty.json', 9)]
    everything, dummy, dummy_source, dummy_sleeps = run_source(source_module, steps)
    assert changes_of(everything) == [('new', USER_REBOOT_ID), ('new', FREEZE_ID),
                                      ('removed', USER_REBOOT_ID), ('removed', FREEZE_ID)]
    other = everything[0]['scheduled_event']
    assert other['affects_this_vm'] is False and other['is_leader'] is False and other['leader'] == 'WestNO_1'

    mine, dummy, dummy_source, dummy_sleeps = run_source(source_module, copy.deepcopy(steps), only_this_vm=True)
    assert changes_of(mine) == [('new', FREEZE_ID), ('removed', FREEZE_ID)]


def test_only_this_vm_still_removes_an_event_emitted_before_the_name_was_known(source_module):
    # Another VM's event, seen while the identity lookup fails: possibly ours, so emitted.
    steps = [document('user_reboot_other_vm.json')] * 3 + [document('user_reboot_other_vm.json', 8)]
    steps += [document('empty.json', 9)] * 2
    items, dummy, source, dummy_sleeps = run_source(source_module, steps, only_this_vm=True, retries=0,
                                                    compute=[500, load_fixture('compute.json')])
    assert source.resource_name == 'WestNO_0'
    assert changes_of(items) == [('new', USER_REBOOT_ID), ('removed', USER_REBOOT_ID)]
    assert items[0]['scheduled_event']['affects_this_vm'] is None
    assert items[1]['scheduled_event']['affects_this_vm'] is False
    assert source._emitted == set()  # pylint: disable=protected-access


def test_resource_name_option_skips_discovery(source_module):
    items, transport, dummy, dummy_sleeps = run_source(source_module, [document('user_reboot_other_vm.json')],
                                                       resource_name='westno_1')
    assert items[0]['scheduled_event']['affects_this_vm'] is True
    assert items[0]['scheduled_event']['is_leader'] is True
    assert not any('/compute' in url for dummy_method, url, dummy_headers in transport.requests)


def test_host_map_names_the_inventory_hosts(source_module):
    items, dummy, dummy_source, dummy_sleeps = run_source(
        source_module, [document('freeze_scheduled.json')], host_map={'westno_0': 'web0.example.com'})
    assert items[0]['meta']['hosts'] == ['web0.example.com', 'WestNO_1']


def test_identity_is_never_guessed_and_asked_again_until_known(source_module, caplog):
    caplog.set_level(logging.WARNING, logger=source_module.LOGGER_NAME)
    steps = [document('freeze_scheduled.json')] * 5 + [document('freeze_started.json')] * 2
    items, transport, source, dummy_sleeps = run_source(source_module, steps, only_this_vm=True, retries=0,
                                                        compute=[500, 429, load_fixture('compute.json')])
    # Before IMDS told the name: possibly ours, never the host name, and said so.
    new = items[0]['scheduled_event']
    assert new['change'] == 'new' and new['affects_this_vm'] is None and new['resource_name'] is None
    assert socket.gethostname().split('.')[0] not in json.dumps(new['resource_name'])
    assert 'possibly' in caplog.text and 'Set resource_name' in caplog.text
    # Asked again on later polls (not once at start), and known from then on.
    lookups = [url for method, url, dummy in transport.requests if '/metadata/instance/compute' in url]
    assert len(lookups) == 3
    assert source.resource_name == 'WestNO_0'
    started = items[1]['scheduled_event']
    assert started['change'] == 'started' and started['affects_this_vm'] is True
    assert started['resource_name'] == 'WestNO_0'


# --- faults --------------------------------------------------------------------------------------------------

def test_faults_are_polled_through_without_duplicates(source_module, caplog):
    caplog.set_level(logging.INFO, logger=source_module.LOGGER_NAME)
    steps = [document('freeze_scheduled.json'),
             500, 500, 500,                    # a failed poll: the first try and both retries
             429, 'refused', 503,              # a second one in a row
             'malformed', document('freeze_scheduled.json'),   # a retry inside one poll cures it
             410, document('freeze_started.json'),
             document('freeze_started.json'), document('empty.json', 4)]
    items, transport, source, sleeps = run_source(source_module, steps, retries=2)
    assert changes_of(items) == [('new', FREEZE_ID), ('started', FREEZE_ID), ('removed', FREEZE_ID)]
    # Said once; the second failure in a row is held back (once a minute at most).
    assert 'polling Scheduled Events failed (1 in a row' in caplog.text
    assert 'failed (2 in a row' not in caplog.text
    assert 'answer again after 2 failed poll(s)' in caplog.text
    assert 'HTTP 500' in caplog.text
    # Backoff grows after consecutive failures and returns to the poll interval after a success.
    assert sleeps[1] > 0.0
    assert max(sleeps) <= source_module.MAX_BACKOFF_SECONDS
    assert source.failures_in_a_row == 0
    # The core's per-attempt record is emptied after each poll so a poller running for weeks does not grow:
    # at most the attempts of the poll that was cancelled remain.
    assert len(source.client.attempt_log) <= source.settings['retries'] + 1


def test_backoff_is_capped(source_module):
    steps = [document('freeze_scheduled.json')] + [500] * 30 + [document('freeze_scheduled.json')]
    items, dummy, dummy_source, sleeps = run_source(source_module, steps, retries=0, poll_interval=1)
    assert changes_of(items) == [('new', FREEZE_ID)]
    failed_poll_sleeps = sleeps[1:31]
    assert failed_poll_sleeps[0] < failed_poll_sleeps[4]
    # Capped, with up to 25 % jitter below the cap so many VMs do not retry in step (the sleeps also lose the
    # few milliseconds each poll took).
    assert max(failed_poll_sleeps) <= source_module.MAX_BACKOFF_SECONDS
    assert min(failed_poll_sleeps[10:]) >= 0.7 * source_module.MAX_BACKOFF_SECONDS


def test_configuration_errors_stop_the_source_before_the_first_good_poll(source_module):
    with pytest.raises(ImdsHttpError) as caught:
        run_source(source_module, [400])
    assert caught.value.status == 400


def test_configuration_errors_after_a_good_poll_are_logged_and_survived(source_module, caplog):
    caplog.set_level(logging.WARNING, logger=source_module.LOGGER_NAME)
    steps = [document('freeze_scheduled.json'), 404, document('empty.json', 3)]
    items, dummy, dummy_source, dummy_sleeps = run_source(source_module, steps)
    assert changes_of(items) == [('new', FREEZE_ID), ('removed', FREEZE_ID)]
    assert 'HTTP 404' in caplog.text


def test_incarnation_starting_over_is_followed(source_module, caplog):
    caplog.set_level(logging.INFO, logger=source_module.LOGGER_NAME)
    steps = [document('freeze_scheduled.json', 5), document('empty.json', 1),
             document('user_reboot_other_vm.json', 2), document('user_reboot_other_vm.json', 2)]
    items, dummy, dummy_source, dummy_sleeps = run_source(source_module, steps)
    assert changes_of(items) == [('new', FREEZE_ID), ('removed', FREEZE_ID), ('new', USER_REBOOT_ID)]
    assert 'went back from 5 to 1' in caplog.text


def test_same_incarnation_number_with_other_events_is_still_compared(source_module):
    # After a 24-hour disable the incarnation starts over and may land on a
    # number already seen; the events decide, not the number.
    steps = [document('freeze_scheduled.json', 2), document('user_reboot_other_vm.json', 2)]
    items, dummy, dummy_source, dummy_sleeps = run_source(source_module, steps)
    assert changes_of(items) == [('new', FREEZE_ID), ('new', USER_REBOOT_ID), ('removed', FREEZE_ID)]


# --- the event loop and cancellation ----------------------------------------------------------------------

class BlockingImds(ScriptedImds):
    """Holds every scheduledevents GET until ``release`` is set."""

    def __init__(self):
        super(BlockingImds, self).__init__([])
        self.release = threading.Event()
        self.entered = threading.Event()
        self.finished = threading.Event()

    def request(self, method, url, headers, body=None, connect_timeout=5.0, read_timeout=10.0):
        if 'scheduledevents' in url:
            self.entered.set()
            self.release.wait(RUN_LIMIT_SECONDS)
            self.finished.set()
        return super(BlockingImds, self).request(method, url, headers, body, connect_timeout, read_timeout)


def test_a_slow_imds_never_blocks_the_event_loop_and_cancel_is_immediate(source_module):
    transport = BlockingImds()
    settings = source_module.parse_args({'endpoint': ENDPOINT})
    source = source_module.ScheduledEventsSource(settings, client=make_client(transport))
    ticks = []

    async def drive():
        task = asyncio.ensure_future(source.run(ListQueue()))
        started = time.monotonic()
        while not transport.entered.is_set():
            assert time.monotonic() - started < RUN_LIMIT_SECONDS
            await asyncio.sleep(0.005)
        # The request is stuck in its thread; the loop keeps running.
        for dummy in range(20):
            ticks.append(time.monotonic())
            await asyncio.sleep(0.005)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    try:
        asyncio.run(drive())
        assert len(ticks) == 20
        # The cancel came back while the request was still stuck (it stays
        # stuck until the test lets it go), so it did not wait for it.
        assert not transport.finished.is_set()
        # The connection is still used by the stuck request, so it is closed
        # by that thread when it returns rather than under its feet.
        closed_before_release = transport.closed
    finally:
        transport.release.set()
    assert transport.finished.wait(RUN_LIMIT_SECONDS)
    deadline = time.monotonic() + RUN_LIMIT_SECONDS
    while transport.closed == closed_before_release and time.monotonic() < deadline:
        time.sleep(0.01)
    assert transport.closed > closed_before_release


def test_cancel_between_polls_closes_the_connection(source_module):
    items, transport, dummy, dummy_sleeps = run_source(source_module, [document('empty.json')])
    # Closed at once, or by the poll's thread if the cancel caught a request in flight.
    deadline = time.monotonic() + RUN_LIMIT_SECONDS
    while not transport.closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert transport.closed >= 1


# --- loading from an installed collection -----------------------------------------------------------------

def _run_python(code, cwd):
    env = dict(os.environ)
    env.pop('PYTHONPATH', None)
    return subprocess.run([sys.executable, '-c', code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=60, check=False)


def test_loads_like_ansible_rulebook_does_from_an_installed_collection():
    # runpy.run_path is how ansible-rulebook loads a source; nothing puts the
    # collection on sys.path for it.
    with tempfile.TemporaryDirectory() as parent:
        make_collections_dir(parent)
        path = os.path.join(parent, 'ansible_collections', 'azure_maintenance', 'scheduled_events', SOURCE_RELATIVE_PATH)
        result = _run_python('import runpy, asyncio; module = runpy.run_path(%r); '
                             'print(asyncio.iscoroutinefunction(module["main"]), '
                             'module["ImdsClient"].__module__ if "ImdsClient" in module else module["client_from_options"].__module__)'
                             % path, parent)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ['True', 'ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_options']


def test_loading_outside_a_collection_says_how_to_fix_it():
    with tempfile.TemporaryDirectory() as cwd:
        result = _run_python('import runpy; runpy.run_path(%r)' % os.path.join(COLLECTION_ROOT, SOURCE_RELATIVE_PATH), cwd)
    if result.returncode == 0:
        pytest.skip('the checkout itself lies inside an ansible_collections tree')
    assert 'ansible-galaxy collection install' in result.stderr


# --- documentation ------------------------------------------------------------------------------------------

def test_documentation_matches_the_arguments(source_module):
    documentation = yaml.safe_load(source_module.DOCUMENTATION)
    options = documentation['options']
    assert sorted(options) == sorted(source_module._OPTIONS)  # pylint: disable=protected-access
    defaults = source_module.parse_args({})
    for name, spec in options.items():
        if 'default' in spec:
            expected = list(defaults[name]) if isinstance(defaults[name], tuple) else defaults[name]
            assert spec['default'] == expected, name
    assert options['changes']['choices'] == list(source_module.CHANGES)
    examples = yaml.safe_load(source_module.EXAMPLES)
    for ruleset in examples:
        assert any('azure_maintenance.scheduled_events.scheduled_events' in source for source in ruleset['sources'])
