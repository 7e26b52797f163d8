# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Rolling maintenance: input checks, the plan, the report. Internal use only.

Controller-side logic of ``playbooks/rolling_maintenance.yml``, kept in
Python so that every safety rule is one readable function with unit tests.
The playbook calls it through the ``rolling_*`` filters. Events come in the
merged form of the ``fleet_events`` filter: normalized events, each with the
inventory ``hosts`` it affects and the ``unmatched_resources`` no host answers
to.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import math
import os
import re

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_document import (
    EVENT_SOURCES,
    EVENT_TYPES,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_select import (
    event_id_key,
    leader_of,
    same_resource,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_time import parse_timestamp

TASK_FILE_KEYS = ('drain_tasks', 'verify_tasks', 'undrain_tasks')
GROUP_SETTING_KEYS = TASK_FILE_KEYS + ('max_unavailable',)

# The VM restarts or moves: wait for the hosts to answer again before verifying.
RESTARTING_TYPES = ('Reboot', 'Redeploy')
# The VM is deleted: nothing comes back to verify or return to service.
DELETING_TYPES = ('Preempt', 'Terminate')

DEFAULT_EVENT_TYPES = ('Freeze', 'Reboot', 'Redeploy')

# What the playbook does with an event. ``await`` events (not to be approved)
# have their hosts drained and are then "parked" until Azure starts them at
# NotBefore; meanwhile they are ``wait`` and their hosts count as down; once
# Started or gone they are recovered like any other.
ACTION_RECOVER = 'recover'
ACTION_APPROVE = 'approve'
ACTION_AWAIT = 'await'
ACTION_WAIT = 'wait'
ACTION_SKIP = 'skip'
ACTION_IGNORE = 'ignore'
ACTIONABLE = (ACTION_RECOVER, ACTION_APPROVE, ACTION_AWAIT)
# Events that start at NotBefore whatever we do are drained before the ones
# we release ourselves: the latter wait for us, the former do not.
_ACTION_RANK = {ACTION_RECOVER: 0, ACTION_AWAIT: 1, ACTION_APPROVE: 2, ACTION_WAIT: 3, ACTION_SKIP: 4,
                ACTION_IGNORE: 5}

_PERCENT = re.compile(r'^\s*(\d+(?:\.\d+)?)\s*%\s*$')

# Milestones of an event, in the order they happen, as stored by the playbook
# (epoch seconds) and shown by the report.
MILESTONES = ('detected', 'drain_started', 'drained', 'approved', 'started', 'completed', 'back',
              'verified', 'undrained')


class RollingInputError(ValueError):
    """An input of the rolling maintenance playbook cannot be used."""


def max_unavailable_count(value, group_size):
    """How many hosts of a group of ``group_size`` may be down at once.

    ``value`` is a whole number >= 1 or a percentage such as ``"25%"``, which
    is rounded down but never below 1 (as ``serial`` does), so a small group
    can still be maintained one host at a time.
    """
    if isinstance(value, bool):
        raise RollingInputError('max_unavailable must be a whole number >= 1 or a percentage such as "25%%", got %r'
                                % (value,))
    if isinstance(value, int):
        if value < 1:
            raise RollingInputError('max_unavailable must be at least 1 (got %d): with 0 no host could ever be '
                                    'drained; leave the group out of maintenance_groups instead' % value)
        return value
    text = str(value).strip()
    if text.isdigit():
        return max_unavailable_count(int(text), group_size)
    match = _PERCENT.match(text)
    if not match:
        raise RollingInputError('max_unavailable must be a whole number >= 1 or a percentage such as "25%%", got %r'
                                % (value,))
    percent = float(match.group(1))
    if not 0 < percent <= 100:
        raise RollingInputError('max_unavailable percentage must be above 0%% and at most 100%%, got %r' % (value,))
    return max(1, int(math.floor(percent * group_size / 100.0 + 1e-9)))


def resolve_task_file(value, shipped_dir, base_dir):
    """The path of a drain/verify/undrain task file, or None when not set.

    A bare file name is one of the task files shipped in the collection's
    ``playbooks/tasks``; anything else is a path, relative ones taken from
    ``base_dir`` (the directory ansible-playbook was started from).
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    text = str(value).strip()
    if os.sep not in text and '/' not in text:
        return os.path.join(shipped_dir, text)
    return os.path.normpath(os.path.join(base_dir, os.path.expanduser(text)))


def _check_list(values, known, name, problems):
    if not isinstance(values, (list, tuple)) or not values:
        problems.append('%s must be a non-empty list, some of: %s (got %r)' % (name, ', '.join(known), values))
        return
    lower = dict((item.lower(), item) for item in known)
    for value in values:
        if not isinstance(value, str) or value.lower() not in lower:
            problems.append('%s: %r is not one of %s' % (name, value, ', '.join(known)))


def _check_positive(options, name, problems):
    value = options.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            value = float(value)
        except (TypeError, ValueError):
            problems.append('%s must be a number of seconds greater than 0, got %r' % (name, value))
            return
    if value <= 0:
        problems.append('%s must be a number of seconds greater than 0, got %r' % (name, value))


def build_setup(maintenance_groups, inventory_groups, play_hosts, group_settings=None, default_settings=None,
                host_overrides=None, options=None, shipped_dir='', base_dir='.'):
    """Check the playbook's inputs and resolve the settings of every host.

    Returns ``{'problems': [...], 'groups': {group: {'hosts', 'max_unavailable', 'limit'}},
    'hosts': {host: {'group', 'drain_tasks', 'verify_tasks', 'undrain_tasks'}}}``. Every
    problem is a sentence saying what to change; the playbook refuses to start
    while there is one.

    A host belongs to the first of ``maintenance_groups`` it is a member of.
    Task files come from the host's own variables first, then the group's entry
    in ``group_settings``, then ``default_settings``.
    """
    problems = []
    group_settings = group_settings if group_settings is not None else {}
    default_settings = default_settings if default_settings is not None else {}
    host_overrides = host_overrides or {}
    options = options or {}
    result = {'problems': problems, 'groups': {}, 'hosts': {}}

    if not isinstance(maintenance_groups, (list, tuple)) or not maintenance_groups \
            or not all(isinstance(name, str) and name for name in maintenance_groups):
        problems.append('maintenance_groups must be a non-empty list of inventory group names, in the order to '
                        'maintain them, for example -e \'{"maintenance_groups": ["web", "db"]}\' (got %r)'
                        % (maintenance_groups,))
        return result
    if len(set(maintenance_groups)) != len(maintenance_groups):
        problems.append('maintenance_groups lists a group twice: %s' % ', '.join(maintenance_groups))
    if not isinstance(group_settings, dict):
        problems.append('rolling_group_settings must be a mapping of group name to settings (%s), got %r'
                        % (', '.join(GROUP_SETTING_KEYS), group_settings))
        group_settings = {}
    if not isinstance(default_settings, dict):
        problems.append('rolling_default_settings must be a mapping with some of %s, got %r'
                        % (', '.join(GROUP_SETTING_KEYS), default_settings))
        default_settings = {}
    for key in sorted(set(default_settings) - set(GROUP_SETTING_KEYS)):
        problems.append('rolling_default_settings: unknown key %r; known keys: %s' % (key, ', '.join(GROUP_SETTING_KEYS)))
    for group in sorted(group_settings):
        if group not in maintenance_groups:
            problems.append('rolling_group_settings has settings for %r, which is not in maintenance_groups (%s)'
                            % (group, ', '.join(maintenance_groups)))
            continue
        settings = group_settings[group]
        if not isinstance(settings, dict):
            problems.append('rolling_group_settings.%s must be a mapping with some of %s, got %r'
                            % (group, ', '.join(GROUP_SETTING_KEYS), settings))
            group_settings[group] = {}
            continue
        for key in sorted(set(settings) - set(GROUP_SETTING_KEYS)):
            problems.append('rolling_group_settings.%s: unknown key %r; known keys: %s'
                            % (group, key, ', '.join(GROUP_SETTING_KEYS)))

    play_hosts = list(play_hosts or [])
    taken = set()
    for group in maintenance_groups:
        members = inventory_groups.get(group)
        if members is None:
            problems.append('maintenance_groups: group %r is not in the inventory; groups there: %s'
                            % (group, ', '.join(sorted(name for name in inventory_groups
                                                       if name not in ('all', 'ungrouped')))))
            continue
        # A host in two maintenance groups is handled with the first one only.
        hosts = [host for host in members if host in play_hosts and host not in taken]
        taken.update(hosts)
        if not hosts:
            problems.append('maintenance_groups: group %r has no hosts in this play (check the inventory and --limit)'
                            % group)
        settings = dict(default_settings)
        settings.update(group_settings.get(group) or {})
        raw_limit = settings.get('max_unavailable', 1)
        try:
            limit = max_unavailable_count(raw_limit, len(hosts))
        except RollingInputError as exc:
            problems.append('group %s: %s' % (group, exc))
            limit = 1
        result['groups'][group] = {'hosts': hosts, 'max_unavailable': raw_limit, 'limit': limit}
        one_way = []
        for host in hosts:
            resolved = {'group': group}
            own = host_overrides.get(host) or {}
            for key in TASK_FILE_KEYS:
                value = own.get(key)
                if value is None or value == '':
                    value = settings.get(key)
                path = resolve_task_file(value, shipped_dir, base_dir)
                if path is not None and not os.path.isfile(path):
                    problems.append('host %s (group %s): %s %r does not exist (looked for %s); a bare name means '
                                    'a task file shipped in the collection\'s playbooks/tasks' % (host, group, key, value, path))
                resolved[key] = path
            if resolved['drain_tasks'] and not resolved['undrain_tasks']:
                one_way.append(host)
            result['hosts'][host] = resolved
        if one_way:
            problems.append('group %s: host(s) %s have drain_tasks but no undrain_tasks: they would stay out of '
                            'service after maintenance; set undrain_tasks too' % (group, ', '.join(one_way)))

    _check_list(options.get('event_types', DEFAULT_EVENT_TYPES), EVENT_TYPES, 'rolling_event_types', problems)
    _check_list(options.get('event_sources', EVENT_SOURCES), EVENT_SOURCES, 'rolling_event_sources', problems)
    for name in ('approve', 'allow_foreign_resources'):
        if name in options and not isinstance(options[name], bool):
            problems.append('rolling_%s must be true or false, got %r' % (name, options[name]))
    for name in ('time_budget_seconds', 'event_timeout_seconds', 'await_limit_seconds', 'urgent_seconds',
                 'settle_seconds', 'poll_interval_seconds', 'back_timeout_seconds', 'imds_poll_interval_seconds',
                 'max_rounds'):
        if name in options:
            _check_positive(options, name, problems)
    return result


def host_status(pairs, play_hosts):
    """Which hosts answered this round's query, and the VM name of each.

    ``pairs``: ``[(host, result), ...]`` of the usable results (from
    ``_fleet.host_results``). Returns ``{'resource_names': {host: name},
    'unavailable': [hosts without a usable result]}``.
    """
    names = dict((host, result.get('resource_name')) for host, result in pairs if result.get('resource_name'))
    unavailable = [host for host in play_hosts if host not in names]
    return {'resource_names': names, 'unavailable': unavailable}


def _sorted_hosts(event, hosts, resource_names):
    """``hosts`` in the order their VMs appear in the event's Resources."""
    def position(host):
        name = resource_names.get(host)
        for index, resource in enumerate(event.get('resources') or []):
            if same_resource(resource, name):
                return index
        return len(event.get('resources') or [])
    return sorted(hosts, key=lambda host: (position(host), host))


def _seconds_until(event, now):
    moment = parse_timestamp(event.get('not_before')) if event.get('not_before') else None
    return None if moment is None else moment - now


def _matches(value, wanted):
    return value is not None and str(value).lower() in [str(item).lower() for item in wanted]


def build_plan(events, resource_names, setup, unavailable_hosts=None, stopped_groups=None, done_ids=None,
               options=None, now=None, parked=None):
    """Decide, for every merged event, what the playbook does with it.

    ``events``: merged events (normalized keys plus ``hosts``, the inventory
    hosts each affects). ``resource_names``: host -> the VM name IMDS knows
    it by, for every host that answered. ``setup``: the result of
    ``build_setup``. ``unavailable_hosts``: hosts that did not answer or are
    known to be down. ``stopped_groups``: group -> why its approvals stopped.
    ``done_ids``: events this run already handled. ``parked``: event id ->
    ``{'hosts', 'event_type', ...}`` of events whose hosts were drained to wait
    for NotBefore; one that is gone from ``events`` gets a ``recover`` entry
    (status ``Gone``) so its hosts are verified and returned to service.

    Returns the entries in handling order; each is the event plus ``hosts``
    (managed hosts affected), ``groups``, ``group``, ``foreign_resources``,
    ``action`` (recover, approve, await, skip, ignore), ``reason``,
    ``actionable``, ``approver``, ``leader``, ``wait_back``, ``recovers``,
    ``seconds_until_not_before``.
    """
    options = options or {}
    unavailable = set(unavailable_hosts or [])
    stopped_groups = stopped_groups or {}
    done = set(event_id_key(event_id) for event_id in (done_ids or []))
    now = now if now is not None else _utc_now()
    event_types = options.get('event_types') or DEFAULT_EVENT_TYPES
    event_sources = options.get('event_sources') or EVENT_SOURCES
    approve = options.get('approve', True)
    allow_foreign = options.get('allow_foreign_resources', False)
    await_limit = float(options.get('await_limit_seconds', 1800))
    groups_order = list(setup.get('groups', {}))
    host_group = dict((host, info['group']) for host, info in setup.get('hosts', {}).items())
    known_names = [name for host, name in resource_names.items() if name and host in host_group]

    def group_of_host(host):
        return host_group.get(host)

    parked = dict((event_id_key(event_id), record) for event_id, record in (parked or {}).items())
    present = set(event_id_key(event.get('event_id')) for event in events)
    events = list(events) + [_gone_parked_event(record) for key, record in sorted(parked.items())
                             if key not in present and key not in done]
    # Hosts of events already Started are down now, whoever started them, and
    # so are the hosts drained for a parked event.
    down_by_started = {}
    for event in events:
        key = event_id_key(event.get('event_id'))
        if key not in done and (event.get('event_status') == 'Started' or key in parked):
            for host in event.get('hosts') or []:
                down_by_started[host] = event.get('event_id')
    parked_hosts = {}
    for key, record in parked.items():
        for host in record.get('hosts') or []:
            parked_hosts[host] = record.get('event_id') or key

    plan = []
    for event in events:
        entry = dict(event)
        hosts = [host for host in (event.get('hosts') or []) if host in host_group]
        hosts = _sorted_hosts(event, hosts, resource_names)
        groups = [group for group in groups_order if any(group_of_host(host) == group for host in hosts)]
        # fleet_events already lists the Resources no host answers to; the
        # check is repeated so that a host left out of resource_names (it
        # failed or is outside the maintenance groups) also counts as foreign.
        foreign = list(event.get('unmatched_resources') or [])
        foreign += [name for name in event.get('resources') or []
                    if name not in foreign and not any(same_resource(name, known) for known in known_names)]
        leader = leader_of(event)
        leader_hosts = [host for host in hosts if same_resource(resource_names.get(host), leader)]
        approver = (leader_hosts or hosts or [None])[0]
        # While an event is Started its own VMs may be frozen or rebooting and
        # unable to answer, so a host that only sees it follows it if possible.
        bystanders = [host for host in event.get('seen_by') or []
                      if host in host_group and host not in hosts and host not in unavailable]
        entry.update(hosts=hosts, groups=groups, group=groups[0] if groups else None, foreign_resources=foreign,
                     leader=leader, approver=approver, watcher=(bystanders or [approver])[0],
                     wait_back=event.get('event_type') in RESTARTING_TYPES,
                     recovers=event.get('event_type') not in DELETING_TYPES,
                     seconds_until_not_before=_seconds_until(event, now))
        if event_id_key(event.get('event_id')) in parked and event_id_key(event.get('event_id')) not in done:
            entry['action'], entry['reason'] = _decide_parked(entry)
        else:
            entry['action'], entry['reason'] = _decide(entry, event_types, event_sources, approve, allow_foreign,
                                                       await_limit, done, stopped_groups, unavailable, down_by_started,
                                                       setup, group_of_host, parked_hosts)
        entry['parked'] = event_id_key(event.get('event_id')) in parked
        entry['actionable'] = entry['action'] in ACTIONABLE
        plan.append(entry)

    urgent_within = float(options.get('urgent_seconds', 600))

    def order(entry):
        # Maintenance groups are handled in their order, except that an event
        # whose NotBefore is near goes first, earliest first: it starts then
        # whether its hosts are drained or not.
        group_rank = groups_order.index(entry['group']) if entry['group'] in groups_order else len(groups_order)
        not_before = entry.get('seconds_until_not_before')
        not_before = not_before if not_before is not None else float('-inf')
        urgency = not_before if not_before <= urgent_within else float('inf')
        return (_ACTION_RANK[entry['action']], urgency, group_rank, not_before, event_id_key(entry.get('event_id')) or '')
    return sorted(plan, key=order)


def _gone_parked_event(record):
    event = dict((key, record.get(key)) for key in ('event_id', 'event_type', 'event_source', 'resources',
                                                    'description', 'duration_in_seconds'))
    event.update(event_status='Gone', not_before=None, not_before_raw=None, hosts=list(record.get('hosts') or []),
                 seen_by=[], unmatched_resources=list(record.get('foreign_resources') or []))
    return event


def _decide_parked(entry):
    if entry.get('event_status') == 'Scheduled':
        return ACTION_WAIT, 'parked with its hosts out of service (drained, where the group drains); Azure starts ' \
                            'it at NotBefore %s' % (entry.get('not_before_raw') or '')
    if entry.get('event_status') == 'Gone':
        return ACTION_RECOVER, 'over (gone from the document) while its hosts were drained; recover them'
    return ACTION_RECOVER, 'started at its NotBefore while its hosts were drained; recover after it'


def _decide(entry, event_types, event_sources, approve, allow_foreign, await_limit, done, stopped_groups,
            unavailable, down_by_started, setup, group_of_host, parked_hosts):
    hosts = entry['hosts']
    if not hosts:
        return ACTION_IGNORE, 'affects no host of the maintenance groups'
    if event_id_key(entry.get('event_id')) in done:
        return ACTION_IGNORE, 'already handled in this run'
    if not _matches(entry.get('event_type'), event_types):
        return ACTION_SKIP, 'event type %s is not in rolling_event_types (%s)' % (
            entry.get('event_type'), ', '.join(event_types))
    if not _matches(entry.get('event_source'), event_sources):
        return ACTION_SKIP, 'event source %s is not in rolling_event_sources (%s)' % (
            entry.get('event_source'), ', '.join(event_sources))
    for group in entry['groups']:
        if group in stopped_groups:
            return ACTION_SKIP, 'approvals for group %s stopped earlier: %s' % (group, stopped_groups[group])
    if entry.get('event_status') == 'Started':
        return ACTION_RECOVER, 'already Started when detected (no notice, e.g. a host hardware failure): no drain, ' \
                               'no approval; recover after it'
    # Recovering such a host after this event would return it to service
    # while the parked event is still to come.
    held = [host for host in hosts if host in parked_hosts]
    if held and entry.get('event_status') != 'Started':
        return ACTION_SKIP, 'host(s) %s are drained for event %s, which starts at its NotBefore; this one waits ' \
                            'until that one is over' % (', '.join(held), parked_hosts[held[0]])
    silent = [host for host in hosts if host in unavailable]
    if silent:
        return ACTION_SKIP, 'host(s) %s did not answer the Scheduled Events query, so they cannot be drained' \
            % ', '.join(silent)
    for group in entry['groups']:
        info = setup['groups'][group]
        affected = set(host for host in hosts if group_of_host(host) == group)
        already_down = set(host for host in info['hosts']
                           if host not in affected and (host in unavailable or host in down_by_started))
        if len(affected) + len(already_down) > info['limit']:
            detail = '%d host(s) of group %s affected (%s)' % (len(affected), group, ', '.join(sorted(affected)))
            if already_down:
                detail += ' while %d already down (%s)' % (len(already_down), ', '.join(sorted(already_down)))
            return ACTION_SKIP, '%s: more than max_unavailable %s (= %d host(s)) would be down' \
                % (detail, info['max_unavailable'], info['limit'])
    if entry['foreign_resources'] and not allow_foreign:
        reason = 'Resources include %s, which no host of this run answers to: approving would release maintenance ' \
                 'on machines that were not drained (rolling_allow_foreign_resources is false)' \
                 % ', '.join(entry['foreign_resources'])
    elif not approve:
        reason = 'approval is off (rolling_approve is false)'
    else:
        return ACTION_APPROVE, 'all affected hosts are managed here and within max_unavailable'
    until = entry.get('seconds_until_not_before')
    if until is None or until > await_limit:
        return ACTION_SKIP, '%s; NotBefore %s is more than rolling_await_limit_seconds (%d) away, so it is left ' \
                            'for a later run' % (reason, entry.get('not_before_raw') or '(unknown)', await_limit)
    return ACTION_AWAIT, '%s; drain now, let it start at NotBefore, recover after it' % reason


def describe_entry(entry):
    """One line about a plan entry, for people following the run."""
    hosts = ', '.join(entry.get('hosts') or []) or 'no managed host'
    status = entry.get('event_status') or '?'
    when = ''
    if status == 'Scheduled' and entry.get('not_before'):
        when = ' NotBefore %s' % entry['not_before']
    return '%s %s %s %s (%s, %s%s) on %s: %s' % (
        entry.get('action', '?').upper(), entry.get('event_type') or '?', entry.get('event_id') or '?',
        'in group ' + entry['group'] if entry.get('group') else 'outside the groups', entry.get('event_source') or '?',
        status, when, hosts, entry.get('reason') or '')


def event_row(event):
    """A fixed-width table row about one normalized event, for overviews."""
    duration = event.get('duration_in_seconds')
    return '%-10s %-10s %-9s %-21s %-9s %-17s %s' % (
        event.get('event_status') or '?', event.get('event_type') or '?', event.get('event_source') or '-',
        event.get('not_before') or '(started)', '?' if duration in (None, -1) else '%ss' % duration,
        (event.get('leader') or '-')[:17], event.get('event_id') or '?')


def _utc_now():
    return (datetime.datetime.utcnow() - datetime.datetime(1970, 1, 1)).total_seconds()


def format_epoch(epoch):
    """ISO 8601 UTC with milliseconds, or None."""
    if epoch is None:
        return None
    moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=float(epoch))
    return moment.strftime('%Y-%m-%dT%H:%M:%S.') + '%03dZ' % (moment.microsecond // 1000)


def _span(record, start, end):
    if record.get(start) is None or record.get(end) is None:
        return None
    return round(float(record[end]) - float(record[start]), 3)


# Timeline bars: (name, from milestone, to milestone). The first milestone
# present of each "to" list ends the bar, so a recovered event (no drain, no
# approval) still shows its impact and verification.
_PHASES = (
    ('notice', 'detected', ('drain_started', 'approved', 'started')),
    ('drain', 'drain_started', ('drained',)),
    ('approval', 'drained', ('approved', 'started')),
    ('starting', 'approved', ('started',)),
    ('impact', 'started', ('completed',)),
    ('return', 'completed', ('back', 'verified')),
    ('verify', 'back', ('verified',)),
    ('undrain', 'verified', ('undrained',)),
)


def build_report(records, run):
    """The report of a run, for the JSON file and the HTML page.

    ``records``: event id -> record (event fields, plan ``action``/``reason``,
    ``outcome``, ``error`` and the milestones as epoch seconds).
    ``run``: ``{'started', 'finished'}`` epochs and anything else to show
    (groups, options, stop reason).
    """
    events = []
    for record in records.values():
        event = dict((key, value) for key, value in record.items() if key not in MILESTONES)
        event['times'] = dict((name, format_epoch(record.get(name))) for name in MILESTONES)
        event['durations'] = {
            'detection_to_approval': _span(record, 'detected', 'approved'),
            'drain': _span(record, 'drain_started', 'drained'),
            'approval_to_start': _span(record, 'approved', 'started'),
            'impact': _span(record, 'started', 'completed'),
            'verify': _span(record, 'back' if record.get('back') is not None else 'completed', 'verified'),
            'total': _span(record, 'detected', 'undrained' if record.get('undrained') is not None else 'completed'),
        }
        event['_epochs'] = dict((name, record.get(name)) for name in MILESTONES)
        events.append(event)
    events.sort(key=lambda item: (item['_epochs'].get('detected') or float('inf'), item.get('event_id') or ''))

    start = run.get('started')
    end = run.get('finished')
    epochs = [value for event in events for value in event['_epochs'].values() if value is not None]
    if start is None and epochs:
        start = min(epochs)
    if end is None and epochs:
        end = max(epochs)
    span = max((end or 0) - (start or 0), 0.001)
    for event in events:
        event['timeline'] = _timeline_bars(event['_epochs'], start or 0, span)
        del event['_epochs']
    outcomes = {}
    for event in events:
        outcomes[event.get('outcome') or 'pending'] = outcomes.get(event.get('outcome') or 'pending', 0) + 1
    summary = dict(run)
    summary.update(started=format_epoch(start), finished=format_epoch(end),
                   wall_seconds=round(span, 3) if start is not None else 0, outcomes=outcomes,
                   events=len(events),
                   approved=sorted(event['event_id'] for event in events if event['times']['approved']))
    return {'run': summary, 'events': events,
            'ticks': _ticks(span)}


def _timeline_bars(epochs, start, span):
    bars = []
    for name, begin, ends in _PHASES:
        if epochs.get(begin) is None:
            continue
        finish = next((epochs[end] for end in ends if epochs.get(end) is not None), None)
        # A phase that took no time (the notice of an event found already
        # Started) would only clutter the picture.
        if finish is None or finish <= epochs[begin]:
            continue
        left = (epochs[begin] - start) / span * 100.0
        width = max((finish - epochs[begin]) / span * 100.0, 0.2)
        bars.append({'phase': name, 'left': round(left, 3), 'width': round(min(width, 100.0 - left), 3),
                     'seconds': round(finish - epochs[begin], 3)})
    return bars


def _ticks(span):
    """Five to ten round time marks across the run, for the picture's axis."""
    for step in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200):
        if span / step <= 10:
            break
    count = int(span // step)
    return [{'left': round(index * step / span * 100.0, 3), 'label': _duration_label(index * step)}
            for index in range(count + 1)]


def _duration_label(seconds):
    seconds = int(seconds)
    if seconds < 60:
        return '%ds' % seconds
    if seconds < 3600:
        return '%dm%02ds' % (seconds // 60, seconds % 60) if seconds % 60 else '%dm' % (seconds // 60)
    return '%dh%02dm' % (seconds // 3600, (seconds % 3600) // 60)
