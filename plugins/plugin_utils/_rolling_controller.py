# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rolling maintenance controller's planner. Internal use only.

A controller in the Kubernetes sense: every round the playbook observes every
host, calls :func:`reconcile` with what it saw, and carries out exactly the
actions returned. The planner is pure: ``(state, observation, results, now,
setup, options) -> (state, actions, messages)``; it never reads a clock or a
host itself, so a round can be replayed in a unit test.

Every event advances on its own every round. What moves an event from one
state to the next is written once, in :data:`TRANSITIONS`; the code below
checks each of its conditions in the table's order, the unit tests walk every
row, and the documentation draws the table.

``max_unavailable`` is checked against every host that is out: drained by
this run, or impacted by an event Azure started, whoever started it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_document import EVENT_SOURCES
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_identity import SOURCE_HOSTNAME
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_select import (
    event_id_key,
    leader_of,
    same_resource,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_time import parse_timestamp

DEFAULT_EVENT_TYPES = ('Freeze', 'Reboot', 'Redeploy')
OVER_BUDGET_CHOICES = ('fail', 'drain_anyway', 'leave')
# The VM restarts or moves: wait for it to answer again before verifying.
RESTARTING_TYPES = ('Reboot', 'Redeploy')
# The VM is deleted: nothing comes back to verify or return to service.
DELETING_TYPES = ('Preempt', 'Terminate')

# Drain this long before NotBefore when nothing has been measured yet.
DEFAULT_DRAIN_LEAD_SECONDS = 120.0
# Measured drains are stretched by this factor plus this margin, so that a
# slower drain next time still finishes before NotBefore.
DRAIN_LEAD_FACTOR = 2.0
DRAIN_LEAD_MARGIN_SECONDS = 30.0
# Reads an event's notice must hold: one to see it, one after its drain to
# approve it, one to see it start. Reads further apart than the notice over
# this can let an event appear and start between two of them with its hosts
# still in service (and when it also leaves between reads, nothing shows it
# ever ran but its NotBefore).
READS_PER_NOTICE = 3

# Event states.
PENDING = 'pending'                  # seen, Scheduled, its hosts not drained yet
OVER_BUDGET = 'over_budget'          # can never fit max_unavailable; left undrained by choice
DRAINING = 'draining'                # drain asked for some of its hosts
APPROVING = 'approving'              # every host drained; approval to send
AWAITING_START = 'awaiting_start'    # approved, or not ours to approve: Azure starts it
IN_IMPACT = 'in_impact'              # Started; waiting for its hosts to answer again
VERIFYING = 'verifying'              # impact over; verify tasks asked for
UNDRAINING = 'undraining'            # verified; return to service asked for
DONE = 'done'                        # its hosts are back in service (or deleted with the VM)
FAILED = 'failed'                    # a verify failed; its host is left drained for a person
CANCELLED = 'cancelled'              # left the document without starting
NOT_HANDLED = 'not_handled'          # type or source not selected
GONE = 'gone'                        # left the document after it started

STATES = (PENDING, OVER_BUDGET, DRAINING, APPROVING, AWAITING_START, IN_IMPACT, VERIFYING, UNDRAINING, DONE, FAILED,
          CANCELLED, NOT_HANDLED, GONE)
# States in which the event has nothing left for this run to do.
SETTLED = (DONE, FAILED, CANCELLED, NOT_HANDLED, GONE)
# States in which an event's hosts must stay out of service.
HOLDS_HOSTS = (DRAINING, APPROVING, AWAITING_START, IN_IMPACT, VERIFYING, FAILED)

# Actions the playbook carries out.
ACT_NONE = 'none'
ACT_DRAIN = 'drain'
ACT_APPROVE = 'approve'
ACT_VERIFY = 'verify'
ACT_UNDRAIN = 'undrain'
ACT_WARN = 'warn'
ACTIONS = (ACT_NONE, ACT_DRAIN, ACT_APPROVE, ACT_VERIFY, ACT_UNDRAIN, ACT_WARN)

# Every transition: (state, condition, next state, action). ``*`` is any
# state that is not settled. Conditions are checked in this order; an event
# can take several rows in one call (drained and approvable in the same round,
# for example). The code refuses a move that is not in this table, so the
# table is always the truth; CONDITIONS says what each condition means.
TRANSITIONS = (
    ('*', 'gone_before_start', CANCELLED, ACT_UNDRAIN),
    (CANCELLED, 'back', PENDING, ACT_NONE),
    ('*', 'started_undrained', IN_IMPACT, ACT_WARN),
    ('*', 'started', IN_IMPACT, ACT_NONE),
    ('*', 'hosts_added', PENDING, ACT_NONE),
    (PENDING, 'not_selected', NOT_HANDLED, ACT_NONE),
    (PENDING, 'never_fits', OVER_BUDGET, ACT_WARN),
    (PENDING, 'never_fits_drain_anyway', DRAINING, ACT_DRAIN),
    (PENDING, 'too_early', PENDING, ACT_NONE),
    (PENDING, 'no_capacity', PENDING, ACT_WARN),
    (PENDING, 'fits', DRAINING, ACT_DRAIN),
    (OVER_BUDGET, 'never_fits', OVER_BUDGET, ACT_WARN),
    (OVER_BUDGET, 'never_fits_drain_anyway', DRAINING, ACT_DRAIN),
    (OVER_BUDGET, 'too_early', PENDING, ACT_NONE),
    (OVER_BUDGET, 'no_capacity', PENDING, ACT_WARN),
    (OVER_BUDGET, 'fits', DRAINING, ACT_DRAIN),
    (DRAINING, 'drain_failed', AWAITING_START, ACT_WARN),
    (DRAINING, 'drained_approvable', APPROVING, ACT_APPROVE),
    (DRAINING, 'drained_not_approvable', AWAITING_START, ACT_NONE),
    (APPROVING, 'approved', AWAITING_START, ACT_NONE),
    (APPROVING, 'drained_not_approvable', AWAITING_START, ACT_NONE),
    (APPROVING, 'approval_failed', APPROVING, ACT_APPROVE),
    (APPROVING, 'approval_given_up', AWAITING_START, ACT_WARN),
    (AWAITING_START, 'too_early', PENDING, ACT_UNDRAIN),
    (AWAITING_START, 'makes_room', PENDING, ACT_UNDRAIN),
    (IN_IMPACT, 'deleted', DONE, ACT_NONE),
    (IN_IMPACT, 'impact_over', VERIFYING, ACT_VERIFY),
    (VERIFYING, 'verify_failed', FAILED, ACT_WARN),
    (VERIFYING, 'verified', UNDRAINING, ACT_UNDRAIN),
    (UNDRAINING, 'undrained', DONE, ACT_NONE),
    (DONE, 'gone', GONE, ACT_NONE),
)

CONDITIONS = {
    'gone_before_start': 'left the document of every host that saw it and answered, without starting and before '
                         'its NotBefore: Azure cancelled it',
    'back': 'in the document again after a read without it: not cancelled after all, so its hosts are drained '
            'again before it may start',
    'started_undrained': 'seen Started while some of its hosts were not drained, or drained only after it may have '
                         'started (no notice, no capacity, not handled, or a drain too slow)',
    'started': 'seen Started with every host drained (or gone unseen after its approval or its NotBefore)',
    'hosts_added': 'its Resources now name a managed host that is not drained: admitted again, within '
                   'max_unavailable (the hosts it drained stay out); its failed approvals are forgotten, since an '
                   'approval refused for the VM Azure added (`allowed_vms`) did not fail',
    'not_selected': 'its type or source is not in rolling_event_types / rolling_event_sources',
    'never_fits': 'it names more hosts of a group than max_unavailable allows, and rolling_over_budget is fail or '
                  'leave',
    'never_fits_drain_anyway': 'it names more hosts of a group than max_unavailable allows, and rolling_over_budget '
                               'is drain_anyway',
    'too_early': 'it cannot be approved here and NotBefore is further away than the drain lead: draining now would '
                 'hold capacity other events need',
    'no_capacity': 'draining it now would put more hosts of a group out than max_unavailable; it waits, and says '
                   'so when NotBefore is within the drain lead',
    'fits': 'its hosts can be drained within max_unavailable',
    'drain_failed': 'a drain task of one of its hosts failed: not approved; Azure starts it at NotBefore all the same, '
                    'so the hosts drained stay out and the failed one counts as out until it is over',
    'drained_approvable': 'every host drained, no VM outside the run in Resources, approval on',
    'drained_not_approvable': 'every host drained, but it names a VM outside the run or approval is off',
    'makes_room': 'a User event this run cannot approve, drained at once in case its user approves it, gives its '
                  'hosts back to service for an event of its group that starts before it and would otherwise start '
                  'on hosts in service; drained again when there is room',
    'approved': 'the leader\'s approval POST succeeded',
    'approval_failed': 'the approval POST failed; tried again next round',
    'approval_given_up': 'the approval POST failed three times since the event last gained hosts; Azure starts it '
                         'at NotBefore',
    'deleted': 'a Preempt or Terminate started: the VM is gone, nothing to verify',
    'impact_over': 'every host answered again after the announced duration (a Reboot or Redeploy host after it '
                   'was seen down), or the event left the document (the only way out for a Freeze that announces '
                   'no duration)',
    'verify_failed': 'a verify task failed: the host stays drained',
    'verified': 'every host passed its verify tasks',
    'undrained': 'every host no other event holds is back in service',
    'gone': 'left the document',
}

# Outcomes, worst first: (name, label, whether it fails the run). The run's
# summary line and exit status follow the worst.
OUTCOMES = (
    ('started_undrained', 'started undrained', True),
    ('will_start_undrained', 'will start undrained at NotBefore', True),
    ('drain_failed', 'drain failed', True),
    ('verify_failed', 'verify failed', True),
    ('in_progress', 'still in progress when the run ended', True),
    ('started_without_notice', 'started without notice (undrained, nothing could be done)', False),
    ('left_undrained', 'left undrained by choice (rolling_over_budget: leave)', False),
    ('not_handled', 'not handled (type or source not selected)', False),
    ('foreign', 'prepared, not approved (names a VM outside the run); started by Azure', False),
    ('started_by_azure', 'prepared and started by Azure', False),
    ('approved', 'prepared and approved', False),
    ('cancelled', 'cancelled by Azure', False),
)
OUTCOME_LABELS = dict((name, label) for name, label, _fails in OUTCOMES)
FAILING_OUTCOMES = tuple(name for name, _label, fails in OUTCOMES if fails)

MILESTONES = ('seen', 'drain_started', 'drained', 'approved', 'started', 'impact_over', 'verified', 'undrained',
              'gone')

_APPROVAL_ATTEMPTS = 3


def transitions_from(state):
    """The rows of TRANSITIONS that apply to ``state``, in order."""
    return [row for row in TRANSITIONS if row[0] == state or (row[0] == '*' and state not in SETTLED)]


def new_state():
    """The controller state before the first round."""
    return {'events': {}, 'hosts': {}, 'resource_names': {}, 'drain_seconds': [], 'last_change': None, 'rounds': 0,
            'observed_hosts': [], 'unobserved_hosts': [], 'unattributed_events': {}, 'blind': False,
            'last_read_at': None,
            'slow_reads': {'count': 0, 'longest_gap_seconds': None, 'shortest_notice_seconds': None}}


def drain_lead_seconds(state, options):
    """How long before NotBefore an event that waits for Azure is drained.

    ``rolling_drain_lead_seconds`` when set; else twice the longest drain
    measured in this run plus a margin, or a default before any was measured.
    """
    configured = options.get('drain_lead_seconds')
    if configured not in (None, ''):
        return float(configured)
    measured = state.get('drain_seconds') or []
    if not measured:
        return DEFAULT_DRAIN_LEAD_SECONDS
    return max(DEFAULT_DRAIN_LEAD_SECONDS, max(measured) * DRAIN_LEAD_FACTOR + DRAIN_LEAD_MARGIN_SECONDS)


def _plain_copy(value):
    """A deep copy of the state, which is plain data (it goes through JSON between rounds).

    copy.deepcopy's memo and dispatch were most of the cost of a round.
    """
    # Most of it is scalars: they are checked here rather than in a call each.
    containers = (dict, list, tuple)
    if isinstance(value, dict):
        return {key: _plain_copy(item) if isinstance(item, containers) else item for key, item in value.items()}
    if isinstance(value, list):
        return [_plain_copy(item) if isinstance(item, containers) else item for item in value]
    if isinstance(value, tuple):
        return tuple(_plain_copy(item) if isinstance(item, containers) else item for item in value)
    return value


def impacting_unhandled(record):
    """Whether ``record`` is an event this run does not handle (not selected) that Azure has started: its hosts
    are out (max_unavailable counts them, as every host an event started impacts) until it leaves."""
    return record['state'] == NOT_HANDLED and record['status'] == 'Started' and record['present']


def is_user(record):
    return str(record.get('event_source')).lower() == 'user'


def _selected(value, wanted):
    return value is not None and str(value).lower() in [str(item).lower() for item in wanted]


@functools.lru_cache(maxsize=4096)
def _parse_not_before(text):
    # The same few NotBefore strings are parsed for every sort of every
    # round (priority()): a quarter of a round's time before this cache.
    return parse_timestamp(text)


def _not_before(record):
    text = record.get('not_before')
    if not text:
        return None
    return _parse_not_before(text) if isinstance(text, str) else parse_timestamp(text)


class _Round(object):
    """One call of reconcile: a working copy of the state and what it decides."""

    def __init__(self, state, observation, results, now, setup, options):
        self.state = _plain_copy(state) if state else new_state()
        self.observation = observation
        self.results = results or {}
        self.now = float(now)
        self.setup = setup
        self.options = options or {}
        self.host_group = dict((host, info['group']) for host, info in setup['hosts'].items())
        self.messages = []
        self.warnings = []
        self.over_budget = self.options.get('over_budget') or 'fail'
        self.lead = drain_lead_seconds(self.state, self.options)
        self._holders = None    # host -> events holding it; None when it must be built again
        self._out_hosts = {}    # group -> hosts out, valid as long as _holders is
        self._known_names = None    # lower-cased VM names of the run's hosts, built once per observation
        self._unnamed = None        # hosts whose VM name is not known, likewise

    # -- hosts -------------------------------------------------------------

    def host(self, name):
        return self.state['hosts'].setdefault(name, {'drained': False, 'deleted': False, 'error': None,
                                                     'drain_started': None, 'drained_at': None,
                                                     'undrain_failed': False})

    def answered(self, host):
        if self.observation is None:
            return False
        return bool((self.observation.get('hosts') or {}).get(host, {}).get('ok'))

    def holds(self, record, host):
        """Whether ``record`` needs ``host`` out of service (or counts it out) now."""
        if host not in record['hosts']:
            return False
        if record['state'] in (DRAINING, APPROVING, AWAITING_START, IN_IMPACT):
            return True
        if record['state'] in (PENDING, OVER_BUDGET) and record['times']['drain_started'] is not None:
            # Admitted again since Azure added a host (hosts_added): what it
            # drained stays out, as it may start at any moment (approved, or
            # its NotBefore near). Read, not self.host(): asking must not add
            # hosts to the state while finish() walks it.
            return bool(self.state['hosts'].get(host, {}).get('drained'))
        if impacting_unhandled(record):
            return True
        if record['state'] == VERIFYING:
            return host not in record['verified_hosts']
        if record['state'] == FAILED:
            # A host that failed its checks stays drained for a person to see;
            # the others of a failed drain go back to service.
            return record['failed_hosts'].get(host, '').startswith('verify')
        return False

    def _holder_map(self):
        """host -> the events holding it, built once per change (see _forget_holders).

        Capacity asks for every host of a group for every event that wants
        some: walking every event for every host made a round over 500 VMs
        and 250 events take 87 s.
        """
        if self._holders is None:
            self._holders = {}
            self._out_hosts = {}
            for record in self.state['events'].values():
                for name in record['hosts']:
                    if self.holds(record, name):
                        self._holders.setdefault(name, []).append(record)
        return self._holders

    def _forget_holders(self):
        """After anything holds() depends on changed: the map and the groups' counts are built again."""
        self._holders = None

    def holders(self, host):
        return self._holder_map().get(host, [])

    def out_hosts(self, group):
        """Hosts of ``group`` out of service: drained, being drained, or impacted."""
        holders = self._holder_map()
        if group not in self._out_hosts:
            states = self.state['hosts']
            self._out_hosts[group] = set(
                host for host in self.setup['groups'][group]['hosts']
                if not states.get(host, {}).get('deleted')
                and (states.get(host, {}).get('drained') or host in holders))
        return self._out_hosts[group]

    # -- results of the actions taken since the last call ----------------------

    def apply_results(self):
        for host, error in sorted((self.results.get('drain') or {}).items()):
            entry = self.host(host)
            if error:
                entry['error'] = 'drain: %s' % error
                for record in self._records_with(host, (DRAINING,)):
                    record['failed_hosts'][host] = 'drain failed: %s' % error
                continue
            if not entry['drained'] and entry.get('drain_started') is not None:
                self.state['drain_seconds'] = (self.state['drain_seconds'] + [self.now - entry['drain_started']])[-10:]
            if not entry['drained'] or entry.get('undrain_failed'):
                entry['drained_at'] = self.now
            entry.update(drained=True, undrain_failed=False)
        # Events the approve step found already started or gone: no approval
        # was sent, so they must not be reported as approved by this run.
        not_approved = set(event_id_key(event_id) for event_id in self.results.get('not_approved') or [])
        for event_id, error in sorted((self.results.get('approve') or {}).items()):
            record = self.state['events'].get(event_id_key(event_id))
            if record is None:
                continue
            record['approval_attempts'] += 1
            if error:
                record['errors'].append('approval: %s' % error)
            elif record['times']['approved'] is None and event_id_key(event_id) not in not_approved:
                record['times']['approved'] = float((self.results.get('approved_at') or {}).get(event_id, self.now))
        for host, error in sorted((self.results.get('verify') or {}).items()):
            for record in self._records_with(host, (VERIFYING,)):
                if error:
                    record['failed_hosts'][host] = 'verify failed: %s' % error
                elif host not in record['verified_hosts']:
                    record['verified_hosts'].append(host)
        for host, error in sorted((self.results.get('undrain') or {}).items()):
            entry = self.host(host)
            if error:
                # Still counted out of service, but maybe back in it: the
                # task may have failed after the host returned. An event
                # that names it drains it again before it is approved.
                entry.update(error='undrain: %s' % error, undrain_failed=True)
                for record in self.state['events'].values():
                    if host in record['hosts'] and record['state'] not in (GONE,):
                        record['errors'].append('undrain of %s failed: %s' % (host, error))
            else:
                entry.update(drained=False, error=None, drain_started=None, drained_at=None, undrain_failed=False)

    def _records_with(self, host, states):
        return [record for record in self.state['events'].values()
                if record['state'] in states and host in record['hosts']]

    # -- observation ---------------------------------------------------------

    def apply_observation(self):
        # A host's VM name is remembered: a host that does not answer this
        # round still owns its VM, which is then not mistaken for a VM
        # outside the run.
        names = self.state.setdefault('resource_names', {})
        named_before = set(names)
        for host, info in self.setup['hosts'].items():
            if info.get('resource_name') and host not in names:
                names[host] = info['resource_name']
        names.update((host, name) for host, name in (self.observation.get('resource_names') or {}).items()
                     if host in self.host_group and name)
        for host, name in (self.observation.get('guessed_names') or {}).items():
            if host in self.host_group and name:
                names.setdefault(host, name)
        newly_named = set(names) - named_before
        self._known_names = None
        self._unnamed = None
        # A host that has not answered once this run may have events nobody
        # has seen: the run cannot say "nothing pending" until it has (a round
        # in which every read timed out on a busy machine saw nothing at all).
        observed = set(self.state.get('observed_hosts') or []) | set(
            host for host in self.setup['hosts'] if self.answered(host))
        self.state['observed_hosts'] = sorted(observed)
        self.state['unobserved_hosts'] = sorted(host for host in self.setup['hosts'] if host not in observed)
        if self.state['unobserved_hosts'] and self.state['rounds'] > 1:
            self.warnings.append('no answer yet from %s: their events are known only if another VM of their '
                                 'availability set sees them; the run goes on until they answer or its time '
                                 'budget is spent' % ', '.join(self.state['unobserved_hosts']))
        seen = {}
        for event in self.observation.get('events') or []:
            key = event_id_key(event.get('event_id'))
            if key:
                seen[key] = event
        # Events read while a host of the run had not told its VM name yet
        # (its IMDS down, often because the event restarts it): they may be
        # its events. Kept until every host has answered once.
        unattributed = self.state.setdefault('unattributed_events', {})
        if newly_named:
            self._attribute_to_newly_named(newly_named)
        for key, event in seen.items():
            record = self.state['events'].get(key)
            hosts = self.hosts_of(event)
            if record is None:
                if not hosts:
                    # Names no host of this run: someone else's event, unless a host not named yet is its VM.
                    if self.state['unobserved_hosts']:
                        first_seen = (unattributed.get(key) or {}).get('first_seen', self.now)
                        unattributed[key] = dict(event, first_seen=first_seen)
                    continue
                record = self._add_record(key, event, hosts)
            self._update_record(record, event, hosts)
        for key, event in sorted(unattributed.items()):
            hosts = self.hosts_of(event)
            if key in self.state['events'] or hosts:
                del unattributed[key]
            if hosts and key not in self.state['events']:
                # Read earlier, gone since: it ran (or was cancelled) while its host could not say whose it was.
                record = self._add_record(key, event, hosts)
                self._update_record(record, event, hosts)
                record['times']['seen'] = event['first_seen']
                record['scheduled_read_at'] = None    # not read this round
                record['present'] = False
                record['times']['gone'] = self.now
        if not self.state['unobserved_hosts']:
            unattributed.clear()
        for key, record in self.state['events'].items():
            if key in seen or not record['present']:
                continue
            # An event is gone only when a host that saw it answered without
            # it: a host that did not answer this round tells nothing.
            if any(self.answered(host) for host in record['seen_by']):
                record['present'] = False
                record['times']['gone'] = self.now

    def _add_record(self, key, event, hosts):
        record = self._new_record(event)
        self.state['events'][key] = record
        self.say(record, 'seen %s, %s, NotBefore %s, hosts %s' % (
            event.get('event_status'), event.get('event_source'), event.get('not_before') or '-', ', '.join(hosts)))
        return record

    def _attribute_to_newly_named(self, newly_named):
        """Give the events read before a host's VM name was known that host too.

        Its VM was taken for one outside the run: an event that started then
        hit it undrained, which its outcome must say. One still ahead drains
        it through the usual rows (hosts_added).
        """
        for record in self.state['events'].values():
            hosts = self.hosts_of({'resources': record['resources']})
            added = [host for host in hosts if host not in record['hosts'] and host in newly_named]
            if not added:
                continue
            # In Resources order, as hosts_of gives them; hosts it holds that
            # Resources no longer name are kept (see _update_record).
            record['hosts'] = [host for host in hosts if host in record['hosts'] or host in added] + [
                host for host in record['hosts'] if host not in hosts]
            self._attribute(record, record['hosts'])
            self.say(record, 'names %s too (VM name learned only now)' % ', '.join(added))
            hit = [host for host in added if not self.host(host)['drained']]
            if record['times']['started'] is not None:
                self._hit_after_start(record, hit, '%s did not answer before it started, so its VM was not known '
                                                   'as one of the run\'s: impacted without a drain')

    def hosts_of(self, event):
        """The managed hosts whose VM is in the event's Resources, in Resources order."""
        names = self.state.get('resource_names') or {}
        ordered = sorted(names)
        hosts = []
        for resource in event.get('resources') or []:
            for host in ordered:
                if same_resource(names[host], resource) and host not in hosts:
                    hosts.append(host)
        return hosts

    def _new_record(self, event):
        return {
            'event_id': event.get('event_id'), 'event_type': event.get('event_type'),
            'event_source': event.get('event_source'), 'description': event.get('description'),
            'duration_in_seconds': event.get('duration_in_seconds'), 'status_when_seen': event.get('event_status'),
            'status': event.get('event_status'), 'not_before': event.get('not_before'), 'resources': [],
            'hosts': [], 'groups': [], 'foreign_resources': [], 'seen_by': [], 'present': True, 'state': PENDING,
            'reason': '', 'outcome': None, 'outcome_reason': '', 'approver': None, 'approval_attempts': 0,
            'over_budget_choice': None, 'undrained_at_start': [], 'down_hosts': [], 'verified_hosts': [],
            'failed_hosts': {}, 'notice_seconds': None, 'scheduled_read_at': None,
            'errors': [], 'warnings': [], 'changes': [], 'times': dict((name, None) for name in MILESTONES),
        }

    def _update_record(self, record, event, hosts):
        first = record['times']['seen'] is None
        if first:
            record['times']['seen'] = self.now
            sources_left_out = [source for source in EVENT_SOURCES if not _selected(source, self.sources())]
            if event.get('event_source') is None and sources_left_out:
                self.warn(record, 'Azure gave no EventSource (an api_version before 2019-08-01), so '
                                  'rolling_event_sources cannot exclude it: handled')
            moment = _not_before(event)
            if event.get('event_status') == 'Scheduled' and moment is not None and moment > self.now:
                record['notice_seconds'] = moment - self.now
        for field, label in (('event_type', 'type'), ('not_before', 'NotBefore'), ('resources', 'Resources')):
            old, new = record.get(field), event.get(field)
            # NotBefore empties when the event starts: that is no change.
            if not first and old != new and not (field == 'not_before' and not new):
                record['changes'].append({'at': self.now, 'field': label, 'from': old, 'to': new})
                self.say(record, 'Azure changed its %s from %s to %s' % (label, old, new))
        record.update(event_type=event.get('event_type'), event_source=event.get('event_source'),
                      duration_in_seconds=event.get('duration_in_seconds'), status=event.get('event_status'),
                      resources=list(event.get('resources') or []), present=True,
                      description=event.get('description'))
        if event.get('not_before'):
            record['not_before'] = event.get('not_before')
        if self.observation.get('lagging'):
            # Resource Graph: a row can show Scheduled minutes after the
            # start, and nothing tells by how much; see drained_too_late.
            record['lagging_reads'] = True
        elif event.get('event_status') == 'Scheduled':
            # Not started at this moment: a drain finished before it was in time.
            record['scheduled_read_at'] = self.now
        record['seen_by'] = sorted(set(record['seen_by']) | set(event.get('seen_by') or []))
        if hosts or first:
            record['hosts'] = hosts
        elif record['hosts']:
            # Seen without any of its hosts in Resources (a reading that
            # names none of them): an event never drops every host it holds
            # this way, and an empty list would make "every host verified"
            # and "every host back" true with nothing done.
            self.warn(record, 'seen naming none of its hosts (%s); kept them' % ', '.join(record['hosts']))
        self._attribute(record, hosts)

    def _attribute(self, record, hosts):
        """The groups, VMs outside the run and approver of ``record`` now that ``hosts`` are among its Resources."""
        names = self.state.get('resource_names') or {}
        record['groups'] = [group for group in self.setup['groups']
                            if any(self.host_group[host] == group for host in hosts)]
        # Azure names ignore case (same_resource); one set per round, not a scan per name.
        if self._known_names is None:
            self._known_names = set(str(name).lower() for host, name in names.items()
                                    if host in self.host_group and name)
        record['foreign_resources'] = [name for name in record['resources']
                                       if name is None or str(name).lower() not in self._known_names]
        # Any VM that sees the event can approve it for all; the leader (first
        # of Resources) does when it answered this round, else another host
        # that did, so a hung IMDS does not hold the approval up.
        leader = leader_of({'resources': record['resources']})
        leaders = [host for host in hosts if same_resource(names.get(host), leader)]
        candidates = leaders + hosts + [host for host in record['seen_by'] if host in self.host_group]
        # The first that answered (seen_by can be a whole availability set).
        record['approver'] = next((host for host in candidates if self.answered(host)),
                                  candidates[0] if candidates else None)

    # -- decisions -------------------------------------------------------------

    def say(self, record, text):
        self.messages.append('%s %s: %s' % (record.get('event_type') or '?', record.get('event_id'), text))
        self.state['last_change'] = self.now

    def warn(self, record, text):
        line = '%s %s: %s' % (record.get('event_type') or '?', record.get('event_id'), text)
        # Once per call: step() can pass the same condition twice in one
        # round (pending -> over_budget, whose handler admits again).
        if line not in self.warnings:
            self.warnings.append(line)
        if text not in record['warnings']:
            record['warnings'].append(text)

    def move(self, record, condition, next_state):
        if (condition, next_state) not in [row[1:3] for row in transitions_from(record['state'])]:
            raise AssertionError('transition %s --%s--> %s is not in TRANSITIONS'
                                 % (record['state'], condition, next_state))
        if record['state'] != next_state:
            self.say(record, '%s -> %s (%s)' % (record['state'], next_state, condition.replace('_', ' ')))
        record['state'] = next_state
        self._forget_holders()
        record['reason'] = CONDITIONS[condition]

    def selected(self, record):
        # An api-version before 2019-08-01 sends no EventSource. Such an event
        # is handled whatever rolling_event_sources says: leaving a Platform
        # event alone would let it hit hosts in service, while draining before
        # a User event only costs the wait (see _update_record's warning).
        source = record.get('event_source')
        return (_selected(record.get('event_type'), self.options.get('event_types') or DEFAULT_EVENT_TYPES)
                and (source is None or _selected(source, self.sources())))

    def sources(self):
        return self.options.get('event_sources') or EVENT_SOURCES

    def approvable(self, record):
        if self.options.get('approve', True) is False:
            return False
        if not record['foreign_resources']:
            return True
        # A VM the run does not know may be the VM of a host that has not
        # told its name yet (its IMDS down): allowing VMs outside the run
        # must not release one of its own undrained.
        return bool(self.options.get('allow_foreign_resources')) and not self.unnamed_hosts()

    def unnamed_hosts(self):
        """Hosts of the run whose VM name is not known yet."""
        if self._unnamed is None:
            names = self.state.get('resource_names') or {}
            self._unnamed = sorted(host for host in self.setup['hosts'] if not names.get(host))
        return self._unnamed

    def undrained_hosts(self, record):
        """The hosts of ``record`` that may be in service: not drained, or their undrain failed.

        A VM a Preempt or Terminate deleted is neither drained nor to drain.
        """
        statuses = ((host, self.host(host)) for host in record['hosts'])
        return [host for host, status in statuses
                if (not status['drained'] or status.get('undrain_failed')) and not status['deleted']]

    def seconds_until(self, record):
        moment = _not_before(record)
        return None if moment is None else moment - self.now

    def priority(self, record):
        # User events this run approves first (someone is waiting for them,
        # and they give their capacity back within minutes), then the
        # earliest NotBefore: it starts then whether its hosts are drained or
        # not. A User event this run cannot approve holds its hosts until
        # NotBefore like any other, so it queues by NotBefore too.
        moment = _not_before(record)
        first = is_user(record) and self.approvable(record)
        return (0 if first else 1, moment if moment is not None else float('inf'), record['times']['seen'] or 0,
                event_id_key(record['event_id']))

    def needs_capacity(self, record):
        return record['state'] in (PENDING, OVER_BUDGET) and record['present'] and record['status'] != 'Started'

    def step(self, record):
        """Take every transition of ``record`` whose condition holds now."""
        for _guard in range(len(STATES)):
            before = record['state']
            self._step_once(record)
            if record['state'] == before:
                return

    def _step_once(self, record):
        state = record['state']
        if state == APPROVING and record['times']['approved'] is not None:
            # The approval came back in the same call that sees the event
            # Started (a Freeze starts within seconds of it): record the
            # approval first, so the log and the report show both steps.
            self.move(record, 'approved', AWAITING_START)
            return
        if state == CANCELLED and record['present']:
            # One answer without it (a host that answered from an older
            # document, a Resource Graph row that lagged) is not Azure's
            # last word: left cancelled, it would start on hosts this run
            # had returned to service. Its earlier drain no longer holds.
            record['outcome'], record['outcome_reason'] = None, ''
            record['approval_attempts'] = 0
            for milestone in ('drain_started', 'drained', 'approved', 'gone'):
                record['times'][milestone] = None
            self.move(record, 'back', PENDING)
            return
        started = record['status'] == 'Started'
        if started and record['times']['started'] is None:
            record['times']['started'] = self.now
            if state not in SETTLED:
                self.on_started(record)
                return
        if state in SETTLED:
            if state == DONE and not record['present']:
                self.move(record, 'gone', GONE)
            return
        if not record['present'] and record['times']['started'] is None:
            not_before = _not_before(record)
            if record['times']['approved'] is not None:
                # Approved, then gone before a round saw it Started: it
                # started when approved and is over already.
                record['times']['started'] = record['times']['approved']
                self.on_started(record)
                return
            if not_before is not None and not_before <= self.now:
                # Gone unseen after its NotBefore (rounds slower than its
                # impact, or unreachable hosts): Azure started it then. Taking
                # it for cancelled would undrain hosts that were impacted
                # without a check and hide the impact from the report.
                record['times']['started'] = not_before
                self.on_started(record)
                return
            if record['outcome'] != 'drain_failed':
                # A drain that failed still fails the run: the next event
                # of those hosts meets the same broken drain.
                record['outcome'] = 'cancelled'
            self.move(record, 'gone_before_start', CANCELLED)
            return
        if state in (APPROVING, AWAITING_START) and not started and [
                host for host in self.undrained_hosts(record) if host not in record['failed_hosts']]:
            # Planned afresh with its new hosts. An approval refused because
            # Azure added them (allowed_vms) did not fail: it must not count
            # towards the attempts after which the event is left to NotBefore.
            record['approval_attempts'] = 0
            self.move(record, 'hosts_added', PENDING)
            return
        if state == IN_IMPACT:
            self.note_hosts_added_after_start(record)
        getattr(self, '_in_' + state)(record)

    def note_hosts_added_after_start(self, record):
        """A host Azure added to an event that has started is impacted undrained: the outcome says so."""
        added = [host for host in self.undrained_hosts(record)
                 if host not in record['undrained_at_start'] and not self.host(host)['deleted']]
        self._hit_after_start(record, added, 'Azure added %s to it after it started: impacted without a drain')

    def _hit_after_start(self, record, hit, why):
        """Hosts found hit undrained by an event that had already started.

        An outcome that said the event went as planned (``why`` % the hosts)
        now says they were hit; one that already said otherwise is kept.
        """
        if not hit:
            return
        record['undrained_at_start'] = record['undrained_at_start'] + hit
        if record['outcome'] in ('approved', 'started_by_azure', 'foreign'):
            record['outcome'] = 'started_undrained'
            record['outcome_reason'] = why % ', '.join(hit)
            self.warn(record, record['outcome_reason'])

    def drained_too_late(self, record):
        """Hosts of ``record`` whose drain may have finished after Azure started it.

        Azure starts an event at NotBefore, or once approved (shortly after, or
        when the other tenants of its node have approved too). A drain that
        finished before the earlier of the two, or before a read (or this
        run's approval) that still found the event Scheduled, was done in time. Any other was maybe not:
        the host is drained by the time a read shows the event Started, but it
        may have been hit in service (a host Azure added after the approval,
        a drain slower than the time left to NotBefore). Only with live reads
        (IMDS).
        """
        if record.get('lagging_reads'):
            # Read from Resource Graph: no read shows when it was still
            # Scheduled, and NotBefore alone would take every drain that
            # ended after it for a hit, though Azure often starts later.
            return []
        approved = record['times']['approved']
        bounds = [moment for moment in (_not_before(record), approved) if moment is not None]
        # An approval sent shows the event was still Scheduled then: the
        # approve task sends none for an event it finds Started.
        in_time = [moment for moment in (min(bounds) if bounds else None, record.get('scheduled_read_at'), approved)
                   if moment is not None]
        if not in_time:
            return []
        latest_in_time = max(in_time)
        statuses = ((host, self.host(host)) for host in record['hosts'])
        # A host whose undrain failed since is one of undrained_hosts().
        return [host for host, status in statuses
                if status['drained'] and not status.get('undrain_failed')
                and (status.get('drained_at') or 0) > latest_in_time]

    def on_started(self, record):
        late = self.drained_too_late(record)
        missing = self.undrained_hosts(record) + late
        record['undrained_at_start'] = missing
        if record['status_when_seen'] == 'Started':
            record['outcome'] = 'started_without_notice'
            record['outcome_reason'] = 'already Started when first seen: no notice (host hardware failure), or ' \
                                       'started before this run'
        elif missing and record['state'] == OVER_BUDGET and self.over_budget == 'leave':
            record['outcome'] = 'left_undrained'
            record['outcome_reason'] = 'more hosts than max_unavailable allows; rolling_over_budget is leave'
        elif missing:
            record['outcome'] = 'started_undrained'
            why = '%s: %s' % (record['state'], record['reason'])
            if late and all(host in late for host in missing):
                why = 'it may have started before %s drain finished (NotBefore %s)' % (
                    'its' if len(missing) == 1 else 'their', record.get('not_before') or '-')
            elif all(host in record['failed_hosts'] for host in missing):
                why = 'its drain failed: %s' % '; '.join(record['failed_hosts'][host] for host in missing)
            elif all(self.host(host).get('undrain_failed') for host in missing):
                why = 'an undrain failed, so %s may have been back in service, and %s not drained again since' % (
                    'it' if len(missing) == 1 else 'they', 'was' if len(missing) == 1 else 'were')
            record['outcome_reason'] = 'started while %s %s not drained (%s)' % (
                ', '.join(missing), 'was' if len(missing) == 1 else 'were', why)
        elif record['times']['approved'] is not None:
            record['outcome'] = 'approved'
        elif record['foreign_resources'] and not self.options.get('allow_foreign_resources'):
            record['outcome'] = 'foreign'
            record['outcome_reason'] = 'names %s, outside this run' % ', '.join(record['foreign_resources'])
        else:
            record['outcome'] = 'started_by_azure'
        if missing:
            self.move(record, 'started_undrained', IN_IMPACT)
            if record['outcome'] == 'started_undrained':
                self.warn(record, record['outcome_reason'])
        else:
            self.move(record, 'started', IN_IMPACT)

    def _in_not_handled(self, record):
        return

    def _in_pending(self, record):
        if not self.selected(record):
            self.move(record, 'not_selected', NOT_HANDLED)
            record['outcome'] = 'not_handled'
            record['outcome_reason'] = CONDITIONS['not_selected']
        elif self.observation is not None:
            # Capacity is handed out once per round, in priority order.
            self.admit(record)

    _in_over_budget = _in_pending

    def admit(self, record):
        """Drain ``record``'s hosts now if it fits; else say why not."""
        until = self.seconds_until(record)
        too_big, full = [], []
        for group in record['groups']:
            info = self.setup['groups'][group]
            mine = self.hosts_in_group(record, group)
            if len(mine) > info['limit']:
                too_big.append('%d hosts of %s (max_unavailable %s = %d)'
                               % (len(mine), group, info['max_unavailable'], info['limit']))
                continue
            after = self.out_hosts(group) | mine
            if len(after) > info['limit']:
                full.append('%s would have %d host(s) out (%s), max_unavailable %d'
                            % (group, len(after), ', '.join(sorted(after)), info['limit']))
        if too_big:
            record['over_budget_choice'] = self.over_budget
            what = 'names %s: it can never fit' % '; '.join(too_big)
            if self.over_budget == 'drain_anyway':
                self.warn(record, what + '; draining anyway (rolling_over_budget: drain_anyway)')
                self.move(record, 'never_fits_drain_anyway', DRAINING)
                self.start_drain(record)
            else:
                self.move(record, 'never_fits', OVER_BUDGET)
                self.warn(record, '%s; it will start undrained at NotBefore %s (rolling_over_budget: %s)'
                          % (what, record.get('not_before') or '?', self.over_budget))
            return
        if self.too_early(record):
            self.move(record, 'too_early', PENDING)
            return
        if full:
            self.move(record, 'no_capacity', PENDING)
            if until is not None and until <= self.lead and not self.make_room(record):
                self.warn(record, 'NotBefore %s is within the drain lead (%ds) and %s: it will start undrained '
                                  'unless capacity frees up' % (record.get('not_before'), self.lead, '; '.join(full)))
            return
        self.move(record, 'fits', DRAINING)
        self.start_drain(record)

    def hosts_in_group(self, record, group):
        return set(host for host in record['hosts'] if self.host_group[host] == group)

    def too_early(self, record):
        """Whether ``record`` is one this run does not approve, whose NotBefore is further away than the lead."""
        until = self.seconds_until(record)
        return not self.approvable(record) and not is_user(record) and until is not None and until > self.lead

    def make_room(self, record):
        """Undrain User events that only wait for someone else's approval, so that ``record`` fits next round.

        Such an event is drained at once, since its user may approve it at any
        moment, and then holds its hosts until its NotBefore. An event of the
        same group that starts before it (``record``, within the drain lead
        and short of capacity) would otherwise start on hosts in service:
        a certain impact weighed against a possible one. The latest of them
        give way first, and only as many as ``record`` needs; it is admitted
        next round, once their hosts are back (max_unavailable holds
        throughout). Returns whether any gave way.
        """
        moment = _not_before(record)
        if moment is None:
            return False
        groups = set(record['groups'])
        candidates = sorted(
            (other for other in self.state['events'].values()
             if self.drained_for_its_user(other) and _not_before(other) > moment and groups & set(other['groups'])),
            key=lambda other: (-_not_before(other), event_id_key(other['event_id'])))
        chosen = []
        for other in candidates:
            chosen.append(other)
            if self.fits_without(record, chosen):
                break
        else:
            return False
        for other in chosen:
            other['times']['drain_started'] = None
            self.move(other, 'makes_room', PENDING)
            self.warn(other, 'its hosts go back to service for %s %s, which starts before it (NotBefore %s); drained '
                             'again when there is room (approved by its user before then, it starts undrained)'
                      % (record.get('event_type') or '?', record['event_id'], record.get('not_before') or '?'))
        return True

    def drained_for_its_user(self, record):
        """Whether ``record`` is a User event this run cannot approve, drained, that has not started."""
        return (record['state'] == AWAITING_START and is_user(record) and record['present']
                and record['status'] != 'Started' and record['times']['approved'] is None
                and not record['failed_hosts'] and not self.approvable(record) and _not_before(record) is not None)

    def fits_without(self, record, yielding):
        """Whether ``record`` fits max_unavailable once the hosts only ``yielding`` hold are back in service."""
        yielding_ids = set(other['event_id'] for other in yielding)
        for group in record['groups']:
            info = self.setup['groups'][group]
            freed = set(host for other in yielding for host in self.hosts_in_group(other, group)
                        if all(holder['event_id'] in yielding_ids for holder in self.holders(host)))
            if len((self.out_hosts(group) - freed) | self.hosts_in_group(record, group)) > info['limit']:
                return False
        return True

    def start_drain(self, record):
        for host in self.undrained_hosts(record):
            if self.host(host)['drain_started'] is None:
                self.host(host)['drain_started'] = self.now
        if record['times']['drain_started'] is None:
            record['times']['drain_started'] = self.now

    def _in_draining(self, record):
        if record['failed_hosts']:
            # Not approved, but Azure starts it at NotBefore anyway: putting
            # the hosts drained so far back would have them impacted in
            # service, and the failed host is as good as out from then on.
            record['outcome'] = 'drain_failed'
            record['outcome_reason'] = '; '.join('%s: %s' % item for item in sorted(record['failed_hosts'].items()))
            self.move(record, 'drain_failed', AWAITING_START)
            self.warn(record, record['outcome_reason'] + '; not approved: Azure starts it at NotBefore %s, the hosts '
                      'drained stay out until it is over' % (record.get('not_before') or '?'))
            return
        if self.undrained_hosts(record):
            return
        record['times']['drained'] = self.now
        if self.approvable(record):
            self.move(record, 'drained_approvable', APPROVING)
        else:
            self.move(record, 'drained_not_approvable', AWAITING_START)
            if self.options.get('allow_foreign_resources') and self.options.get('approve', True) is not False:
                self.warn(record, 'names %s, and %s of this run %s not told %s VM name yet (they may be the same '
                                  'VMs): not approved, Azure starts it at NotBefore' % (
                                      ', '.join(str(name) for name in record['foreign_resources']),
                                      ', '.join(self.unnamed_hosts()),
                                      'has' if len(self.unnamed_hosts()) == 1 else 'have',
                                      'its' if len(self.unnamed_hosts()) == 1 else 'their'))

    def _in_approving(self, record):
        if record['times']['approved'] is not None:
            self.move(record, 'approved', AWAITING_START)
        elif not self.approvable(record):
            # Azure added a VM outside the run to it after a failed attempt:
            # approving now would release that VM's maintenance too.
            self.move(record, 'drained_not_approvable', AWAITING_START)
            self.warn(record, 'its Resources now name %s, outside this run: not approved, Azure starts it at '
                              'NotBefore' % ', '.join(record['foreign_resources']))
        elif record['approval_attempts'] >= _APPROVAL_ATTEMPTS:
            self.move(record, 'approval_given_up', AWAITING_START)
            self.warn(record, 'approval failed %d times (%s); Azure starts it at NotBefore'
                      % (record['approval_attempts'], record['errors'][-1] if record['errors'] else '?'))
        elif record['approval_attempts']:
            self.move(record, 'approval_failed', APPROVING)

    def _in_awaiting_start(self, record):
        # Otherwise it leaves this state when Started or gone, checked for every state.
        if record['times']['approved'] is None and self.too_early(record):
            # Azure moved NotBefore further than the lead: its hosts go back
            # to service until then, for the events that need the capacity now.
            record['times']['drain_started'] = None
            self.move(record, 'too_early', PENDING)

    def _in_in_impact(self, record):
        if record['event_type'] in DELETING_TYPES:
            self.move(record, 'deleted', DONE)
            for host in record['hosts']:
                self.host(host).update(deleted=True, drained=False)
            return
        if self.observation is None:
            return
        if record['present'] and not self.impact_over(record):
            return
        record['times']['impact_over'] = self.now
        self.move(record, 'impact_over', VERIFYING)

    def impact_over(self, record):
        """Whether every host of a Started event that is still in the document is past its impact."""
        hosts = record['hosts']
        if record['event_type'] in RESTARTING_TYPES:
            # A restart's host may answer for a while after the event turned
            # Started, before it goes down: only an answer after a round in
            # which it did not answer shows it came back. A host never seen
            # down (restarted between two reads, or a Reboot that turned out
            # a Freeze) waits until the event leaves the document.
            # A round in which no host answered says nothing about this one.
            down = record.setdefault('down_hosts', [])
            if not self.state.get('blind'):
                down.extend(host for host in hosts if host not in down and not self.answered(host))
            if not all(host in down for host in hosts):
                return False
        duration = record.get('duration_in_seconds')
        announced = isinstance(duration, (int, float)) and not isinstance(duration, bool) and duration >= 0
        if not announced and record['event_type'] not in RESTARTING_TYPES:
            # A pause of unknown length (DurationInSeconds -1, or none before
            # api-version 2020-07-01): an answer after the event turned
            # Started may come before the pause, and no answer shows that it
            # happened, so its hosts stay drained until the event leaves.
            return False
        if announced and self.now < record['times']['started'] + duration:
            return False
        # A host whose IMDS never answers waits until the event left the document.
        return all(self.answered(host) for host in hosts)

    def _in_verifying(self, record):
        failed = dict((host, why) for host, why in record['failed_hosts'].items() if why.startswith('verify'))
        if failed:
            record['outcome'] = 'verify_failed'
            record['outcome_reason'] = '; '.join('%s: %s' % item for item in sorted(failed.items()))
            self.move(record, 'verify_failed', FAILED)
            self.warn(record, record['outcome_reason'] + '; the host stays drained')
        elif record['hosts'] and all(host in record['verified_hosts'] for host in record['hosts']):
            record['times']['verified'] = self.now
            self.move(record, 'verified', UNDRAINING)

    def _in_undraining(self, record):
        # A host another event still holds stays out: this event is done
        # once it is really back in service.
        if any(self.host(host)['drained'] and not self.host(host)['deleted'] for host in record['hosts']):
            return
        record['times']['undrained'] = self.now
        self.move(record, 'undrained', DONE)

    def check_read_pace(self):
        """Warn when this read came too long after the previous one for the shortest notice seen.

        The notice of an event is its NotBefore less the time it was first
        seen Scheduled. Azure gives 30 s (Preempt) to 15 minutes; a run whose
        rounds slow down (many hosts, slow drain or verify tasks, a loaded
        controller) would otherwise lose events between reads without a word.
        """
        previous = self.state.get('last_read_at')
        self.state['last_read_at'] = self.now
        if previous is None or self.now <= previous:
            return
        noticed = [(record['notice_seconds'], event_id_key(record['event_id']), record)
                   for record in self.state['events'].values()
                   if record.get('notice_seconds') and record['state'] != NOT_HANDLED]
        if not noticed:
            return
        notice, _key, record = min(noticed, key=lambda item: item[:2])
        gap = self.now - previous
        if gap * READS_PER_NOTICE <= notice:
            return
        slow = self.state.setdefault('slow_reads', new_state()['slow_reads'])
        slow['count'] += 1
        slow['longest_gap_seconds'] = max(gap, slow['longest_gap_seconds'] or 0.0)
        slow['shortest_notice_seconds'] = min(notice, slow['shortest_notice_seconds'] or notice)
        self.warnings.append(
            'reads %d s apart against a notice of %d s (%s %s): fewer than %d reads per notice, so an event can '
            'appear and start between two reads with its hosts in service. Make rounds shorter: fewer hosts per '
            'run, faster drain and verify tasks, a lower rolling_poll_interval_seconds, or rolling_source: '
            'resource_graph' % (round(gap), round(notice), record.get('event_type') or '?', record.get('event_id'),
                                READS_PER_NOTICE))

    def run(self):
        self.apply_results()
        if self.observation is not None:
            self.state['rounds'] = self.state.get('rounds', 0) + 1
            # A round in which no host answered has seen nothing: it cannot
            # tell that nothing is pending (a loaded controller can time out
            # every read at once).
            self.state['blind'] = not any(info.get('ok') for info in (self.observation.get('hosts') or {}).values())
            self.apply_observation()
            self.check_read_pace()
        # Holding a host depends on an event's state (changed by move(), which
        # forgets the map), hosts (set by the observation) and verified or
        # failed hosts (set by the results): all of them before this point.
        self._forget_holders()
        records = sorted(self.state['events'].values(), key=self.priority)
        # Events that need no capacity move first, so that what they free is
        # available to the events waiting for it in this very round.
        waiting = [record for record in records if self.needs_capacity(record)]
        for record in records:
            if record not in waiting:
                self.step(record)
        for record in waiting:
            self.step(record)
        return self.finish()

    def finish(self):
        """The actions of this call, computed from the state alone (level-triggered)."""
        self._forget_holders()
        events = sorted(self.state['events'].values(), key=self.priority)
        drain, verify, wait_back, approve, once_drained = [], [], [], {}, {}
        # approver -> the VMs its approvals may release: what the events
        # named when read. The approve task refuses an event that names
        # more by then (a VM Azure added since is not drained).
        releasable = {}
        for record in events:
            if record['state'] == DRAINING:
                drain.extend(host for host in self.undrained_hosts(record)
                             if host not in record['failed_hosts'] and host not in drain)
                if self.approvable(record) and record['approver']:
                    # What check mode, which drains nothing, can say it would approve next.
                    once_drained.setdefault(record['approver'], []).append(record['event_id'])
            elif record['state'] == APPROVING and record['approver']:
                approve.setdefault(record['approver'], []).append(record['event_id'])
                releasable.setdefault(record['approver'], set()).update(record['resources'])
            elif record['state'] == VERIFYING:
                for host in record['hosts']:
                    # A host another event is still about to impact (or
                    # impacting) is verified after that one.
                    if any(other is not record and host in other['hosts']
                           and (other['state'] in (DRAINING, APPROVING, AWAITING_START, IN_IMPACT)
                                or impacting_unhandled(other)) for other in events):
                        continue
                    # A host whose drain failed is verified too: it was hit in service.
                    if host not in record['verified_hosts'] \
                            and not record['failed_hosts'].get(host, '').startswith('verify') and host not in verify:
                        verify.append(host)
                        if record['event_type'] in RESTARTING_TYPES:
                            wait_back.append(host)
        undrain = sorted(host for host, entry in self.state['hosts'].items()
                         if entry['drained'] and not entry['deleted'] and not self.holders(host))
        hosts = {}
        for host in sorted(set(drain) | set(verify) | set(undrain) | set(approve)):
            hosts[host] = {'drain': host in drain, 'verify': host in verify, 'wait_back': host in wait_back,
                           'undrain': host in undrain, 'approve': approve.get(host, []),
                           'allowed_vms': sorted(releasable.get(host, ()))}
        # An event this run handled that is still in the document holds the
        # run: Azure maintains update domains one after another, and the next
        # domain's event tends to appear when the previous one leaves (about
        # 10 minutes after it started).
        settled = (all(record['state'] in SETTLED and not (record['state'] == DONE and record['present'])
                       for record in self.state['events'].values())
                   and not undrain and not self.state.get('blind') and not self.state.get('unobserved_hosts'))
        return {'state': self.state,
                'actions': {'drain': drain, 'verify': verify, 'undrain': undrain, 'approve': approve, 'hosts': hosts,
                            'approve_once_drained': once_drained},
                'messages': self.messages, 'warnings': self.warnings, 'settled': settled,
                'drain_lead_seconds': self.lead}


def reconcile(state, observation, results, now, setup, options=None):
    """One pass of the controller.

    ``state``: what the previous call returned under ``state`` (or None).
    ``observation``: this round's reading, ``{'hosts': {host: {'ok': bool,
    'resource_name': str}}, 'resource_names': {host: name}, 'events':
    [merged fleet events], 'lagging': whether a Scheduled status may be
    minutes old (Resource Graph), which turns drained_too_late off}`` (see :func:`observe`), or None when the call only
    records the ``results`` of actions taken earlier in the same round.
    ``results``: ``{'drain'|'verify'|'undrain': {host: error or ''},
    'approve': {event_id: error or ''}, 'approved_at': {event_id: epoch}}``. ``now``: epoch seconds.
    ``setup``: the result of ``_rolling.build_setup``. ``options``: the
    ``rolling_*`` settings (event_types, event_sources, approve,
    allow_foreign_resources, over_budget, drain_lead_seconds).

    Returns ``{'state', 'actions': {'drain', 'verify', 'undrain': [hosts],
    'approve': {approver host: [event ids]}, 'hosts': {host: {...}}},
    'messages', 'warnings', 'settled', 'drain_lead_seconds'}``.
    """
    return _Round(state, observation, results, now, setup, options).run()


def observe(pairs, hosts, merged_events):
    """The observation of one round from the hosts' results.

    ``pairs``: ``[(host, result)]`` of the usable results (``_fleet.host_results``);
    ``hosts``: every host of the run; ``merged_events``: ``_fleet.merge_fleet_events(pairs)``.
    A host without a usable result (failed, timed out, unreachable) is unknown
    for this round.
    """
    answered = dict((host, result.get('resource_name')) for host, result in pairs if result.get('resource_name'))
    # A name the module guessed (the host name, when the VM's identity could
    # not be read, say throttled after an approval) is used only for a host
    # whose VM name is not known yet: it must not rename a known VM, which
    # would drop the host from its events and return it to service early.
    guessed = set(host for host, result in pairs if result.get('resource_name_source') == SOURCE_HOSTNAME)
    return {
        'hosts': dict((host, {'ok': host in answered, 'resource_name': answered.get(host)}) for host in hosts),
        'resource_names': dict((host, name) for host, name in answered.items() if host not in guessed),
        'guessed_names': dict((host, name) for host, name in answered.items() if host in guessed),
        'unknown': [host for host in hosts if host not in answered],
        'events': merged_events,
    }


def outcome_of(record):
    """The outcome of an event at the end of a run (a name from OUTCOMES)."""
    state = record['state']
    if state == NOT_HANDLED:
        return 'not_handled'
    if state == OVER_BUDGET:
        return 'left_undrained' if record.get('over_budget_choice') == 'leave' else 'will_start_undrained'
    if state in (PENDING, DRAINING, APPROVING, AWAITING_START):
        # A failed drain says more than "in progress" about an event that did not start yet.
        return 'drain_failed' if record.get('outcome') == 'drain_failed' else 'in_progress'
    if state in (IN_IMPACT, VERIFYING, UNDRAINING) and record.get('outcome') not in (
            'started_undrained', 'started_without_notice', 'left_undrained'):
        # Its hosts are not back in service yet.
        return 'in_progress'
    return record.get('outcome') or 'in_progress'


def worst_outcome(outcomes):
    """The worst of ``outcomes`` by the order of OUTCOMES, or None."""
    order = [name for name, _label, _fails in OUTCOMES]
    ranked = sorted((order.index(name) for name in outcomes if name in order))
    return order[ranked[0]] if ranked else None
