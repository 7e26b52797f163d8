# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The running service: the poll loop, the hook runner, approvals, signals.

Two threads share the state under one lock. The main thread polls on a fixed
beat, folds each document into the state, approves and saves. The runner
thread runs the phases due, one hook at a time across all events (two drains
at once are rarely what anyone wants), and saves the state before each hook
starts and after it ends. When a prepare phase ends it wakes the main thread,
so an approval waiting on it goes out at once, not at the next poll.
"""

import copy
import os
import signal
import threading
import time

from .core._se_client import ImdsClient
from .core._se_errors import (
    ImdsHttpError,
    ImdsRedirectError,
    ImdsTimeoutError,
    ImdsUnreachableError,
    MalformedDocumentError,
    RequestCancelledError,
    ScheduledEventsError,
)
from .core._se_poller import ApprovalGate, Poller, incarnation_reset_message
from .core._se_select import event_id_key
from .core._se_transport import HttpClientTransport

from . import hooks as hook_runner
from .config import PHASES, ConfigError, load_config, validate_loopback_listen
from .logs import configure_logging
from .metrics import PREFIX as METRICS_PREFIX
from .metrics import Metrics, MetricsListenError, MetricsServer, check_listen_address, write_textfile
from .notify import EventLog, WebhookNotifier, make_record
from .reconcile import (
    PHASE_PREPARE,
    PHASE_RECOVER,
    approvals_due,
    next_job,
    reconcile,
    retire_finished,
)
from .security import InsecureFileError
from .signals import SignalRelay
from .state import HISTORY_LIMIT, StateError, load_state, save_state

# Polls after throttling (429) or a server error (5xx) back off up to this (or
# the poll interval if longer): short enough to catch a 30-second Preempt
# notice, long enough to stop hammering an IMDS that asks for less. The
# backoff, Retry-After, the identity lookup and change tracking are the
# core's shared poller (core._se_poller).
MAX_ERROR_BACKOFF_SECONDS = 5.0
# Hook output lines logged per hook run.
OUTPUT_LOG_LINES = 200

# Hook outcomes that make a phase count as failed; ``interrupted`` means the
# service died while the hook ran and nobody knows how it ended.
_FAILED_OUTCOMES = (hook_runner.OUTCOME_FAILED, hook_runner.OUTCOME_TIMEOUT, hook_runner.OUTCOME_REFUSED,
                    hook_runner.OUTCOME_INTERRUPTED)


def error_kind(exc):
    """A short label for a poll error, used in metrics."""
    if isinstance(exc, ImdsHttpError):
        return 'http_%s' % exc.status
    if isinstance(exc, ImdsTimeoutError):
        return 'timeout'
    if isinstance(exc, ImdsUnreachableError):
        return 'unreachable'
    if isinstance(exc, MalformedDocumentError):
        return 'malformed'
    if isinstance(exc, ImdsRedirectError):
        return 'redirect'
    return 'other'


def _iso_now():
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())


class Service(object):
    """One daemon instance. ``run()`` returns the process exit status."""

    def __init__(self, config, config_path, logger, dry_run=False):
        self.config = config
        self.config_path = config_path
        self.logger = logger
        self.lock = threading.RLock()
        self.wake = threading.Event()
        self.work_available = threading.Event()
        self.stopping = threading.Event()
        # Set by the first poll that read the events: until then the state
        # saved before a restart may be out of date (an event Started or gone
        # meanwhile), so the hook runner runs only recover phases.
        self.polled = threading.Event()
        self.abort_hooks = threading.Event()
        self.reload_requested = threading.Event()
        self.metrics = Metrics()
        self.client = None
        self.poller = None
        self.approvals = ApprovalGate()
        self.metrics_server = None
        self.webhook = None
        self.event_log = None
        self.runner = None
        # "prepare hook 10-drain for <EventId>" while the hook runner runs a
        # hook, else None: what a stop waits for, said in its log line.
        self.running_hook = None
        self.signal_relay = None
        self.next_delay = config['poll_interval']
        self.textfile_written_at = None
        self.state, warning = load_state(config['state_file'], set_aside_corrupt=not dry_run)
        if warning:
            self.logger.warning(warning)
        self.dirty = False
        # Failed saves in a row; the first is said loudly, the recovery too.
        self.state_save_failures = 0
        self.metrics.set('state_save_failing', 0)

    # -- set-up -------------------------------------------------------------

    @property
    def resource_name(self):
        """This VM's name in Scheduled Events, or None while it is not known."""
        return self.poller.identity.name if self.poller is not None else self.config['resource_name']

    @property
    def identity_source(self):
        return self.poller.identity.source if self.poller is not None else None

    def _build_client(self, first_call_spent=False):
        # The core's standard-library transport, as in the modules: one
        # kept-alive connection, no proxy variables, no redirects. It costs
        # less than half the CPU per poll of a requests session and 7 MB less
        # memory (docs/service.md, "The HTTP transport").
        # No retries inside a request: the poller polls again with its own
        # backoff, so a 410 or a hung IMDS never holds the loop for long.
        # cancelled: a stopping service must not spin through a retry loop
        # whose sleeps (stopping.wait) return at once.
        return ImdsClient(endpoint=self.config['endpoint'], api_version=self.config['api_version'],
                          timeout=self.config['timeout'], retries=0, transport=HttpClientTransport(),
                          sleep=self._sleep, first_call_spent=first_call_spent, cancelled=self.stopping.is_set)

    def _build_poller(self):
        return Poller(self.client, self.config['poll_interval'], resource_name=self.config['resource_name'],
                      max_backoff=MAX_ERROR_BACKOFF_SECONDS)

    def _sleep(self, seconds):
        self.stopping.wait(seconds)

    def _start_outputs(self):
        metrics = self.config['metrics']
        if metrics['listen']:
            host, port = validate_loopback_listen(metrics['listen'])
            self.metrics_server = MetricsServer(self.metrics, host, port)
            self.metrics_server.start()
            self.logger.info('metrics served on http://%s:%d/metrics', host, port)
        webhook = self.config['webhook']
        if webhook['url']:
            self.webhook = WebhookNotifier(webhook['url'], webhook['headers'], webhook['retries'], webhook['timeout'],
                                           self.logger, follow_redirects=webhook['follow_redirects'],
                                           proxy=webhook['proxy'])
            self.webhook.start()
        self.event_log = EventLog(self.config['event_log']) if self.config['event_log'] else None

    def _stop_outputs(self):
        if self.metrics_server is not None:
            self.metrics_server.stop()
            self.metrics_server = None
        if self.webhook is not None:
            self.webhook.stop()
            self.webhook = None

    def _resolve_identity(self):
        """Ask IMDS for this VM's name now if it is not known (``--once`` does; the poll loop asks on each poll)."""
        if self.poller is None:
            self.poller = self._build_poller()
        if self.poller.identity.due():
            self._log_messages(self.poller.identity.lookup(self.client, deadline=self.poller.quick_deadline()))
        self._remember_identity()

    def _remember_identity(self):
        name = self.resource_name
        if name is None:
            return
        with self.lock:
            if self.state.get('resource_name') != name:
                self.state['resource_name'] = name
                self.dirty = True

    def _log_messages(self, messages):
        for message in messages:
            level, text = message[0], message[-1]
            getattr(self.logger, level)('%s', text)

    # -- signals ------------------------------------------------------------

    def on_stop_signal(self):
        if self.stopping.is_set():
            # Asked twice: do not wait for the running hook any longer.
            self.abort_hooks.set()
        self.stopping.set()
        self.wake.set()
        self.work_available.set()

    def on_reload_signal(self):
        self.reload_requested.set()
        self.wake.set()

    def install_signal_handlers(self, relay=None):
        """Act on SIGTERM, SIGINT (stop) and SIGHUP (reload) from a thread of the relay, never inside a handler.

        ``relay``: one the command line installed before the service was
        built; the signals it kept until now are acted on at once.
        """
        if relay is None:
            relay = SignalRelay()
            relay.install()
        self.signal_relay = relay
        kept = relay.act_with({signal.SIGTERM: self.on_stop_signal, signal.SIGINT: self.on_stop_signal,
                               signal.SIGHUP: self.on_reload_signal})
        for signum in kept:
            self.logger.info('%s came while the service was starting: acting on it now', signal.Signals(signum).name)

    def reload(self):
        """Re-read the configuration; keep the running one if the new one is unusable."""
        self.reload_requested.clear()
        try:
            config = load_config(self.config_path)
            if config['metrics']['listen'] and config['metrics']['listen'] != self.config['metrics']['listen']:
                check_listen_address(*validate_loopback_listen(config['metrics']['listen']))
        except (ConfigError, MetricsListenError) as exc:
            self.logger.error('reload refused, still running the previous configuration: %s', exc)
            return False
        try:
            hook_runner.check_hooks(config['hooks_dir'], PHASES)
        except InsecureFileError as exc:
            self.logger.error('after reload: %s; that hook will be refused when its phase comes', exc)
        old = self.config
        configure_logging(config['log']['format'], config['log']['level'])
        with self.lock:
            self.config = config
        if any(old[key] != config[key] for key in ('endpoint', 'api_version', 'timeout')):
            self.client.close()
            # Same VM, same IMDS: the first call's allowance is not given twice.
            self.client = self._build_client(first_call_spent=old['endpoint'] == config['endpoint'])
        restart_keys = ('endpoint', 'api_version', 'timeout', 'resource_name', 'poll_interval')
        if any(old[key] != config[key] for key in restart_keys):
            # Identity and change tracking start over; the state keeps the events.
            self.poller = self._build_poller()
            self.approvals = ApprovalGate()
        if (old['metrics'], old['webhook'], old['event_log']) != (config['metrics'], config['webhook'], config['event_log']):
            self._stop_outputs()
            self._start_outputs()
        self.dirty = True
        self.logger.info('configuration reloaded from %s', self.config_path)
        return True

    # -- notifications ------------------------------------------------------

    def _publish(self, kind, event, level='info', message=None, **detail):
        record = make_record(kind, self.resource_name, event, **detail)
        fields = {'kind': kind}
        if event is not None:
            fields.update({'event_id': event.get('event_id'), 'event_type': event.get('event_type'),
                           'event_status': event.get('event_status'), 'affects_this_vm': event.get('affects_this_vm')})
        fields.update(detail)
        if message:
            text = message
        elif event:
            text = 'event %s: %s %s %s' % (kind, event.get('event_id'), event.get('event_type'), event.get('event_status'))
        else:
            text = kind
        getattr(self.logger, level)(text, extra={'fields': fields})
        if self.event_log is not None:
            try:
                self.event_log.write(record)
            except OSError as exc:
                self.logger.error('cannot append to the event log %s: %s', self.event_log.path, exc)
        if self.webhook is not None:
            self.webhook.submit(record)

    def _publish_notes(self, notes):
        for kind, event, detail in notes:
            if kind in ('new', 'started'):
                self.metrics.add('events_seen_total', event_type=event.get('event_type'),
                                 event_status=event.get('event_status'),
                                 affects_this_vm=hook_runner.tristate_text(event.get('affects_this_vm')))
            if kind == 'new' and event.get('affects_this_vm') is None:
                self._publish(kind, event, message='event new: %s %s may concern this VM, whose name is not known yet '
                              '(Resources %s); its prepare hooks may run, approval waits for the name'
                              % (event.get('event_id'), event.get('event_type'), event.get('resources')), **detail)
            elif kind == 'new' and not event.get('affects_this_vm'):
                self._publish(kind, event, message='event new: %s %s does not list this VM (%s) in Resources %s; '
                              '%s' % (event.get('event_id'), event.get('event_type'), self.resource_name,
                                      event.get('resources'), 'its hooks run as configured (hooks_for_other_vms)'
                                      if detail.get('hooks') else 'no hooks run'), **detail)
            elif kind == 'incarnation_reset':
                self._publish(kind, None, level='warning', message=incarnation_reset_message(
                    (detail['previous_incarnation'], detail['document_incarnation'])), **detail)
            elif kind == 'prepare_skipped':
                self._publish(kind, event, level='warning', message='event %s Started before its prepare hooks could '
                              'begin; they are skipped' % event.get('event_id'), **detail)
            elif kind == 'started_skipped':
                self._publish(kind, event, level='warning', message='event %s was gone before its started hooks could '
                              'begin; they are skipped, its recover hooks run' % event.get('event_id'), **detail)
            elif kind == 'hooks_dropped':
                self._publish(kind, event, message='event %s does not list this VM (%s) in Resources %s: %s'
                              % (event.get('event_id'), self.resource_name, event.get('resources'),
                                 'its recover hooks still run, to undo its prepare hooks' if detail['recover_runs']
                                 else 'its hooks are dropped'), **detail)
            else:
                self._publish(kind, event, **detail)

    # -- polling ------------------------------------------------------------

    def poll_once(self):
        """Poll, fold the document into the state and approve; return True on a usable document."""
        started = time.monotonic()
        self.metrics.add('polls_total')
        result = self.poller.poll()
        self._log_messages(result.messages)
        self._remember_identity()
        self.next_delay = result.delay
        if not result.ok:
            if not isinstance(result.error, RequestCancelledError):
                self.metrics.add('poll_errors_total', kind=error_kind(result.error))
                self.logger.debug('poll failed: %s', result.error.message,
                                  extra={'fields': {'error_kind': error_kind(result.error)}})
            return False
        normalized = result.document
        self.metrics.observe_poll(time.monotonic() - started)
        self.metrics.set('last_successful_poll_timestamp_seconds', round(time.time(), 3))
        with self.lock:
            notes = reconcile(self.state, normalized, self.resource_name, self.config['hooks_for_other_vms'])
            if result.changes.incarnation_changed or notes:
                self.dirty = True
            self.polled.set()
            if any(record['due'] for record in self.state['events'].values()):
                self.work_available.set()
        self.metrics.set('document_incarnation', normalized['document_incarnation'])
        # Events of a VM whose name is not known yet are counted as unknown, never as "not this VM".
        counts = dict((label, 0) for label in ('true', 'false', 'unknown'))
        for event in normalized['events']:
            counts[hook_runner.tristate_text(self.poller.identity.affects(event))] += 1
        for label, count in counts.items():
            self.metrics.set('pending_events', count, affects_this_vm=label)
        self._publish_notes(notes)
        self.approve_pending()
        self.save_if_dirty()
        return True

    def next_poll_delay(self):
        return self.next_delay

    # -- approvals ----------------------------------------------------------

    def approve_pending(self):
        """POST one approval for every event the policy approves now."""
        with self.lock:
            keys, decisions = approvals_due(self.state, self.config['approval'], self.resource_name)
            for key, (decision, rule, reason) in decisions.items():
                record = self.state['events'][key]
                if record['approval'] != [decision, rule, reason]:
                    record['approval'] = [decision, rule, reason]
                    self.dirty = True
                    self.logger.info('approval of %s: %s (%s)', record['event'].get('event_id'), decision, reason,
                                     extra={'fields': {'event_id': record['event'].get('event_id'),
                                                       'decision': decision, 'rule': rule}})
            if not keys or not self.approvals.ready():
                return
            # Recorded (and saved) before the POST: after a crash right after
            # it, the restarted service knows it may have approved already.
            approving_at = _iso_now()
            for key in keys:
                self.state['events'][key]['approving_at'] = approving_at
            self.dirty = True
            events = [self.state['events'][key]['event'] for key in keys]
        self.save_if_dirty()
        try:
            self.client.approve([event['event_id'] for event in events], deadline=self.poller.quick_deadline())
        except ScheduledEventsError as exc:
            with self.lock:
                for key in keys:
                    self.state['events'][key]['approving_at'] = None
                self.dirty = True
            if isinstance(exc, RequestCancelledError):
                return
            self.metrics.add('approval_errors_total')
            delay, say_it = self.approvals.failed(exc)
            for event in events:
                level = 'error' if say_it else 'debug'
                self._publish('approval_failed', event, level=level, error=exc.message,
                              message='approving %s failed (tried again in %.1f s; said once a minute): %s'
                              % (event.get('event_id'), delay, exc.message))
            return
        self.approvals.succeeded()
        approved_at = _iso_now()
        with self.lock:
            for key in keys:
                self.state['events'][key]['approved_at'] = approved_at
            self.dirty = True
        self.metrics.add('approvals_total', len(events))
        for event in events:
            self._publish('approved', event, rule=decisions[event_id_key(event.get('event_id'))][1])
        self.save_if_dirty()

    # -- state --------------------------------------------------------------

    def save_if_dirty(self):
        with self.lock:
            if not self.dirty:
                return
            retire_finished(self.state, HISTORY_LIMIT)
            try:
                save_state(self.config['state_file'], self.state)
            except StateError as exc:
                self._state_not_saved(exc)
                return
            self.dirty = False
            self._state_saved()

    def _state_not_saved(self, exc):
        """Degrade loudly, once: keep serving, say it once, show it in the metrics until a save works again."""
        self.state_save_failures += 1
        self.metrics.add('state_save_errors_total')
        self.metrics.set('state_save_failing', 1)
        if self.state_save_failures == 1:
            # Stopping would be worse: events would go unseen and recover
            # hooks unrun. Saving is tried again whenever the state changes.
            self.logger.error('%s. The service keeps running - events are followed, hooks run, approvals go out - '
                              'but until the state can be saved a restart would run hooks again. Said once; '
                              'the metric %sstate_save_failing is 1 until a save succeeds.', exc, METRICS_PREFIX,
                              extra={'fields': {'kind': 'state_save_failing'}})
        else:
            self.logger.debug('%s (failure %d in a row)', exc, self.state_save_failures)

    def _state_saved(self):
        if self.state_save_failures:
            self.logger.warning('the state is saved to %s again, after %d failed attempt(s)',
                                self.config['state_file'], self.state_save_failures,
                                extra={'fields': {'kind': 'state_saved_again'}})
            self.state_save_failures = 0
        self.metrics.set('state_save_failing', 0)

    def _save_now(self):
        with self.lock:
            self.dirty = True
            self.save_if_dirty()

    # -- hooks --------------------------------------------------------------

    def _runner_loop(self):
        while True:
            with self.lock:
                job = next_job(self.state, recover_only=not self.polled.is_set())
            if self.stopping.is_set():
                return
            if job is None:
                # Woken when work arrives; the timeout is only a safety net.
                self.work_available.wait(5.0)
                self.work_available.clear()
                continue
            try:
                self._run_phase(*job)
            except Exception:  # a bug here must not silently stop every later hook
                self.logger.exception('the hook runner failed on %s %s; it keeps going', *job)
                with self.lock:
                    record = self.state['events'].get(job[0])
                    if record and record['due'] and record['due'][0] == job[1]:
                        record['due'].pop(0)
                self._save_now()

    def _begin_phase(self, key, phase):
        with self.lock:
            record = self.state['events'][key]
            phase_record = record['phases'].get(phase)
            if phase_record is None:
                phase_record = {'hooks': hook_runner.list_hooks(self.config['hooks_dir'], phase), 'results': {},
                                'started_at': _iso_now(), 'finished': False}
                record['phases'][phase] = phase_record
                # Saved with the first hook's start: one fsync less before it runs.
                self.dirty = True
        return phase_record

    def _run_phase(self, key, phase):
        phase_record = self._begin_phase(key, phase)
        with self.lock:
            event = copy.deepcopy(self.state['events'][key]['event'])
        self.logger.info('%s hooks for %s %s: %s', phase, event.get('event_id'), event.get('event_type'),
                         ', '.join(phase_record['hooks']) or 'none',
                         extra={'fields': {'phase': phase, 'event_id': event.get('event_id')}})
        for name in phase_record['hooks']:
            with self.lock:
                result = phase_record['results'].get(name)
            if result is not None and result['outcome'] != 'running':
                continue
            if result is not None and phase != PHASE_RECOVER:
                # The service died while this hook ran; running it again could
                # repeat what it did, so it counts as failed instead. Recover
                # hooks do run again: forgetting a recover is worse.
                with self.lock:
                    result.update({'outcome': hook_runner.OUTCOME_INTERRUPTED, 'finished_at': _iso_now()})
                self._save_now()
                self.metrics.add('hooks_failed_total', phase=phase)
                self._publish('hook_failed', event, level='error', phase=phase, hook=name,
                              outcome=hook_runner.OUTCOME_INTERRUPTED,
                              message='%s hook %s for %s was interrupted when the service stopped; not run again'
                              % (phase, name, event.get('event_id')))
                continue
            if self.stopping.is_set():
                return
            self._run_one_hook(key, phase, phase_record, name, event)
        with self.lock:
            outcomes = [phase_record['results'].get(name, {}).get('outcome') for name in phase_record['hooks']]
            if self.stopping.is_set() and any(outcome in (None, 'running') for outcome in outcomes):
                return
            phase_record['finished'] = True
            phase_record['finished_at'] = _iso_now()
            phase_record['succeeded'] = not any(outcome in _FAILED_OUTCOMES for outcome in outcomes)
            record = self.state['events'][key]
            if phase in record['due']:
                record['due'].remove(phase)
            self.dirty = True
        if phase == PHASE_PREPARE:
            # The main thread, woken, saves this phase's end together with
            # the approval it may now send (recorded before its POST): one
            # fsync less between the last prepare hook and the approval.
            # Each hook's outcome is saved already.
            self.wake.set()
            return
        self.save_if_dirty()

    def _run_one_hook(self, key, phase, phase_record, name, event):
        path = os.path.join(hook_runner.phase_directory(self.config['hooks_dir'], phase), name)
        annotated = self.poller.identity.annotate(event)
        with self.lock:
            incarnation = self.state['document_incarnation']
            phase_record['results'][name] = {'outcome': 'running', 'started_at': _iso_now()}
        # Saved before the hook starts: after a crash it is known to have begun.
        self._save_now()
        self.logger.info('running %s hook %s for %s', phase, name, event.get('event_id'),
                         extra={'fields': {'phase': phase, 'hook': name, 'event_id': event.get('event_id')}})
        self.running_hook = '%s hook %s for %s' % (phase, name, event.get('event_id'))
        try:
            result = hook_runner.run_hook(path, hook_runner.hook_input(phase, annotated, self.resource_name,
                                                                       incarnation),
                                          hook_runner.hook_environment(os.environ, phase, annotated,
                                                                       self.resource_name, incarnation),
                                          self.config['hook_timeout'], abort=self.abort_hooks)
        finally:
            self.running_hook = None
        for line in result.output.splitlines()[:OUTPUT_LOG_LINES]:
            self.logger.info('%s/%s: %s', phase, name, line,
                             extra={'fields': {'phase': phase, 'hook': name, 'event_id': event.get('event_id')}})
        if phase == PHASE_RECOVER and result.outcome == hook_runner.OUTCOME_INTERRUPTED:
            # Stopped by a second SIGTERM: its result stays "running", which
            # is what makes the next start run it again (see _run_phase).
            self.logger.warning('recover hook %s for %s was interrupted as the service stopped; it runs again when '
                                'the service starts', name, event.get('event_id'),
                                extra={'fields': {'phase': phase, 'hook': name, 'event_id': event.get('event_id')}})
            return
        with self.lock:
            phase_record['results'][name] = {'outcome': result.outcome, 'exit_code': result.exit_code,
                                             'started_at': phase_record['results'][name]['started_at'],
                                             'finished_at': _iso_now(), 'duration': round(result.duration, 3),
                                             'message': result.message}
        self._save_now()
        self.metrics.add('hooks_run_total', phase=phase)
        detail = {'phase': phase, 'hook': name, 'outcome': result.outcome, 'exit_code': result.exit_code}
        if result.succeeded:
            self._publish('hook', event, message='%s hook %s for %s: %s'
                          % (phase, name, event.get('event_id'), result.message), **detail)
        else:
            self.metrics.add('hooks_failed_total', phase=phase)
            self._publish('hook_failed', event, level='error', message='%s hook %s for %s failed: %s'
                          % (phase, name, event.get('event_id'), result.message), **detail)

    # -- metrics textfile ---------------------------------------------------

    def write_textfile_if_due(self, force=False):
        path = self.config['metrics']['textfile']
        if not path:
            return
        now = time.monotonic()
        if not force and self.textfile_written_at is not None and \
                now - self.textfile_written_at < self.config['metrics']['textfile_interval']:
            return
        self.textfile_written_at = now
        try:
            write_textfile(path, self.metrics.render())
        except OSError as exc:
            self.logger.error('cannot write the metrics textfile %s: %s', path, exc)

    # -- main loop ----------------------------------------------------------

    def start(self):
        """Set up client, poller, outputs and the hook runner (``run`` calls it).

        The identity is asked for by the first poll, not before it: a failed
        lookup must not delay the first read of the events.
        """
        self.client = self._build_client()
        self.poller = self._build_poller()
        self._start_outputs()
        self.runner = threading.Thread(target=self._runner_loop, name='hook-runner')
        self.runner.daemon = True
        self.runner.start()
        self.work_available.set()

    def run(self):
        self.start()
        self.logger.info('polling %s every %s s as %s', self.client.events_url, self.config['poll_interval'],
                         self.resource_name or 'this VM (name to be asked from IMDS)')
        next_poll = time.monotonic()
        while not self.stopping.is_set():
            self.wake.clear()
            if self.reload_requested.is_set():
                self.reload()
            now = time.monotonic()
            if now >= next_poll:
                self.poll_once()
                # A fixed beat from the start of each poll, so that detection
                # latency stays within one interval whatever a poll costs.
                next_poll = max(now + self.next_poll_delay(), time.monotonic())
            else:
                self.approve_pending()
            # Every pass: a failed poll must not hold back what the hook runner left to save.
            self.save_if_dirty()
            self.write_textfile_if_due()
            self.wake.wait(max(0.0, next_poll - time.monotonic()))
        return self.shutdown()

    def shutdown(self):
        """Let the running hook finish or time out, save the state, stop outputs."""
        running = self.running_hook
        if running:
            self.logger.info('stopping: waiting for the running %s to end (at most %s s; a second SIGTERM ends it '
                             'at once)', running, self.config['hook_timeout'])
        else:
            self.logger.info('stopping: no hook is running')
        self.work_available.set()
        if self.runner is not None:
            while self.runner.is_alive():
                self.runner.join(timeout=0.5)
        self._save_now()
        self.write_textfile_if_due(force=True)
        self._stop_outputs()
        if self.client is not None:
            self.client.close()
        if self.dirty:
            self.logger.error('stopped; the state could NOT be saved to %s (see the error above)', self.config['state_file'])
        else:
            self.logger.info('stopped; state saved to %s', self.config['state_file'])
        return 0
