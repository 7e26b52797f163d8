# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Rolling maintenance: input checks and the report. Internal use only.

Controller-side logic of ``playbooks/rolling_maintenance.yml`` around the
planner in ``_rolling_controller``: ``build_setup`` checks the inputs and
resolves every host's settings before anything happens; ``build_report``
turns the planner's records into the report. The playbook calls them through
the ``rolling_*`` filters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import difflib
import math
import os
import re

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_document import (
    EVENT_SOURCES,
    EVENT_TYPES,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._rolling_controller import (
    DEFAULT_EVENT_TYPES,
    FAILING_OUTCOMES,
    MILESTONES,
    OUTCOME_LABELS,
    OUTCOMES,
    OVER_BUDGET_CHOICES,
    outcome_of,
    worst_outcome,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._rolling_fleet import (
    SOURCE_IMDS,
    SOURCES,
)

TASK_FILE_KEYS = ('drain_tasks', 'verify_tasks', 'undrain_tasks')
GROUP_SETTING_KEYS = TASK_FILE_KEYS + ('max_unavailable',)

_PERCENT = re.compile(r'^\s*(\d+(?:\.\d+)?)\s*%\s*$')


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


def _is_bare_name(text):
    """Whether a task file value names a file shipped with the collection rather than a path."""
    return os.sep not in text and '/' not in text


def resolve_task_file(value, shipped_dir, base_dir):
    """The path of a drain/verify/undrain task file, or None when not set.

    A bare file name is one of the task files shipped in the collection's
    ``playbooks/tasks``; anything else is a path, relative ones taken from
    ``base_dir`` (the directory ansible-playbook was started from).
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    text = str(value).strip()
    if _is_bare_name(text):
        return os.path.join(shipped_dir, text)
    return os.path.normpath(os.path.join(base_dir, os.path.expanduser(text)))


def _task_file_hint(value, base_dir):
    """What to write instead of a task file ``value`` that was not found."""
    text = str(value).strip()
    if not _is_bare_name(text):
        return ''
    hint = '; a bare name means a task file shipped in the collection\'s playbooks/tasks'
    if os.path.isfile(os.path.join(base_dir, text)):
        return hint + ': to use the %s in %s, write ./%s' % (text, base_dir, text)
    return hint + ': give a file of your own as a path, such as ./%s' % text


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
                host_overrides=None, options=None, shipped_dir='', base_dir='.', run_variables=None):
    """Check the playbook's inputs and resolve the settings of every host.

    Returns ``{'problems': [...], 'groups': {group: {'hosts', 'max_unavailable', 'limit'}},
    'hosts': {host: {'group', 'drain_tasks', 'verify_tasks', 'undrain_tasks'}}}``. Every
    problem is a sentence saying what to change; the playbook refuses to start
    while there is one.

    A host belongs to the first of ``maintenance_groups`` it is a member of.
    Task files come from the host's own variables first, then the group's entry
    in ``group_settings``, then ``default_settings``.

    ``run_variables``: ``{variable: {host: value}}``, the run-wide ``rolling_*``
    variables as each host that defines one sees it (see check_run_variables).
    """
    problems = []
    group_settings = group_settings if group_settings is not None else {}
    default_settings = default_settings if default_settings is not None else {}
    host_overrides = host_overrides or {}
    options = options or {}
    result = {'problems': problems, 'warnings': [], 'groups': {}, 'hosts': {}}

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
            # One settings file for every group, the groups picked per launch:
            # only a name that is no group at all is a mistake.
            if group not in (inventory_groups or {}):
                problems.append('rolling_group_settings has settings for %r, which is neither in maintenance_groups '
                                '(%s) nor a group of the inventory: check its spelling'
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
        # {(setting, value as given, path looked for): [hosts]}: one problem
        # for every host that names the same missing file, not one a host.
        missing = {}
        for host in hosts:
            resolved = {'group': group}
            own = host_overrides.get(host) or {}
            for key in TASK_FILE_KEYS:
                value = own.get(key)
                if value is None or value == '':
                    value = settings.get(key)
                path = resolve_task_file(value, shipped_dir, base_dir)
                if path is not None and not os.path.isfile(path):
                    missing.setdefault((key, value, path), []).append(host)
                resolved[key] = path
            if own.get('resource_name'):
                resolved['resource_name'] = str(own['resource_name'])
            if resolved['drain_tasks'] and not resolved['undrain_tasks']:
                one_way.append(host)
            result['hosts'][host] = resolved
        for (key, value, path), named_by in sorted(missing.items(), key=lambda item: (item[0][0], str(item[0][1]))):
            problems.append('group %s: %s %r does not exist (looked for %s; host(s) %s)%s'
                            % (group, key, value, path, ', '.join(named_by), _task_file_hint(value, base_dir)))
        if one_way:
            problems.append('group %s: host(s) %s have drain_tasks but no undrain_tasks: they would stay out of '
                            'service after maintenance; set undrain_tasks too' % (group, ', '.join(one_way)))

    _check_list(options.get('event_types', DEFAULT_EVENT_TYPES), EVENT_TYPES, 'rolling_event_types', problems)
    _check_list(options.get('event_sources', EVENT_SOURCES), EVENT_SOURCES, 'rolling_event_sources', problems)
    for name in ('approve', 'allow_foreign_resources'):
        if name in options and not isinstance(options[name], bool):
            problems.append('rolling_%s must be true or false, got %r%s' % (
                name, options[name], ' (a string: a survey answer or -e key=value gives text; pass a boolean, as in '
                                     '-e \'{"rolling_%s": false}\' or the job template\'s YAML variables)' % name
                if isinstance(options[name], str) else ''))
    if options.get('source', SOURCE_IMDS) not in SOURCES:
        problems.append('rolling_source must be one of %s, got %r' % (', '.join(SOURCES), options.get('source')))
    if options.get('over_budget', 'fail') not in OVER_BUDGET_CHOICES:
        problems.append('rolling_over_budget must be one of %s, got %r'
                        % (', '.join(OVER_BUDGET_CHOICES), options.get('over_budget')))
    for name in ('time_budget_seconds', 'settle_seconds', 'poll_interval_seconds', 'back_timeout_seconds',
                 'observe_timeout_seconds', 'approve_timeout_seconds', 'max_rounds'):
        if name in options:
            _check_positive(options, name, problems)
    if options.get('drain_lead_seconds') not in (None, ''):
        _check_positive(options, 'drain_lead_seconds', problems)
    check_run_variables(run_variables or {}, play_hosts, problems)
    result['warnings'] = check_variable_names(options.get('defined_variables') or [], problems)
    return result


# Every rolling_* variable the playbook reads. Another name starting with
# rolling_ is a typo until proven otherwise: it would be ignored silently.
KNOWN_VARIABLES = (
    'rolling_group_settings', 'rolling_default_settings', 'rolling_drain_tasks', 'rolling_verify_tasks',
    'rolling_undrain_tasks', 'rolling_event_types', 'rolling_event_sources', 'rolling_approve',
    'rolling_allow_foreign_resources', 'rolling_over_budget', 'rolling_drain_lead_seconds',
    'rolling_time_budget_seconds', 'rolling_settle_seconds', 'rolling_poll_interval_seconds',
    'rolling_back_timeout_seconds', 'rolling_observe_timeout_seconds', 'rolling_approve_timeout_seconds',
    'rolling_max_rounds', 'rolling_report_dir', 'rolling_source', 'rolling_fleet_options',
)
# A host's own task files (key in the settings: variable). Every other
# variable applies to the whole run, which takes it from the first host.
HOST_TASK_VARIABLES = dict((key, 'rolling_' + key) for key in TASK_FILE_KEYS)
RUN_VARIABLES = tuple(name for name in KNOWN_VARIABLES if name not in HOST_TASK_VARIABLES.values())
# Read by earlier versions; the controller has no use for them any more.
OBSOLETE_VARIABLES = {
    'rolling_event_timeout_seconds': 'every event is followed every round; rolling_time_budget_seconds bounds the run',
    'rolling_await_limit_seconds': 'events that cannot be approved are drained rolling_drain_lead_seconds before '
                                   'NotBefore',
    'rolling_urgent_seconds': 'events are ordered User first, then by NotBefore',
    'rolling_imds_poll_interval_seconds': 'the controller reads every host once per round',
}


CHECK_MODE_STOP = 'check mode: the plan above is what a run would do now; nothing was drained or approved'


def stop_reason(plan, options, started_at, check_mode=False):
    """Why the run ends after the round that made ``plan``, or '' to go on.

    In order: check mode (one round shows the plan), the time budget spent
    (``time_budget_seconds`` since ``started_at``), nothing pending for
    ``settle_seconds`` since the last change (or the start), and
    ``max_rounds`` rounds observed. The rounds are the planner's
    observations (``state.rounds``), so that a round the fleet plane watch
    made without the hosts counts like any other.
    """
    if check_mode:
        return CHECK_MODE_STOP
    now = float(plan['now'])
    started_at = float(started_at)
    state = plan['state']
    if now - started_at >= float(options['time_budget_seconds']):
        return 'time budget of %s s spent' % options['time_budget_seconds']
    if plan['settled'] and now - float(state.get('last_change') or started_at) >= float(options['settle_seconds']):
        return 'nothing pending for %s s' % options['settle_seconds']
    if int(state.get('rounds') or 0) >= int(float(options['max_rounds'])):
        return 'stopped after %d rounds (rolling_max_rounds)' % int(state.get('rounds') or 0)
    return ''


def _group_setting_hint(key):
    hint = 'give it per group as rolling_group_settings.<group>.%s, or for every group as rolling_default_settings.%s' \
        % (key, key)
    return hint + (', or for one host as rolling_%s' % key if key in TASK_FILE_KEYS else '')


def check_variable_names(names, problems):
    """Report misspelled ``rolling_*`` variables as problems; return warnings about obsolete ones."""
    warnings, unknown = [], []
    names = set(str(item) for item in names)
    for name in sorted(names.intersection(GROUP_SETTING_KEYS)):
        # A group setting given as a variable of its own is read by nobody.
        warnings.append('%s is set as a variable, which this playbook does not read: %s' % (name, _group_setting_hint(name)))
    for name in sorted(name for name in names if name.startswith('rolling_')):
        if name in KNOWN_VARIABLES:
            continue
        if name in OBSOLETE_VARIABLES:
            warnings.append('%s is no longer used: %s' % (name, OBSOLETE_VARIABLES[name]))
            continue
        setting = difflib.get_close_matches(name[len('rolling_'):], GROUP_SETTING_KEYS, n=1)
        close = difflib.get_close_matches(name, KNOWN_VARIABLES, n=1)
        if setting and setting[0] not in TASK_FILE_KEYS:
            unknown.append('%s (did you mean the group setting %s? %s)' % (name, setting[0], _group_setting_hint(setting[0])))
        else:
            unknown.append(name + (' (did you mean %s?)' % close[0] if close else ''))
    if unknown:
        problems.append('unknown variable(s) %s: the rolling_* prefix belongs to this playbook, whose variables '
                        'are %s; rename your own variables' % (', '.join(unknown), ', '.join(KNOWN_VARIABLES)))
    return warnings


_NOT_SET = object()


def _same_setting(first, second):
    """Whether two hosts' values of a variable are the same setting (5 from YAML and "5" from INI are)."""
    if first is _NOT_SET or second is _NOT_SET:
        return first is second
    if isinstance(first, (dict, list)) or isinstance(second, (dict, list)):
        return first == second
    return str(first) == str(second)


def _hosts_phrase(hosts, shown=3):
    if len(hosts) <= shown:
        return ', '.join(hosts)
    return '%s and %d more' % (', '.join(hosts[:shown]), len(hosts) - shown)


def check_run_variables(values, play_hosts, problems):
    """Report every run-wide ``rolling_*`` variable whose value is not the same on every host.

    ``values``: ``{variable: {host: value}}`` for the hosts that define it. A
    variable set in one group's variables and not another's, or to different
    values, would otherwise be taken from whichever host comes first, while a
    few per-host tasks (the source of a round) read each host's own value.
    """
    for name in sorted(name for name in values if name in RUN_VARIABLES):
        by_host = values[name] or {}
        settings = []  # [(value, [hosts])], in the order of the play's hosts
        for host in play_hosts:
            value = by_host.get(host, _NOT_SET)
            for known, hosts in settings:
                if _same_setting(known, value):
                    hosts.append(host)
                    break
            else:
                settings.append((value, [host]))
        if len(settings) < 2:
            continue
        described = []
        for value, hosts in settings:
            shown = 'not set' if value is _NOT_SET else repr(value)
            if len(shown) > 60:
                shown = shown[:57] + '...'
            described.append('%s on %s' % (shown, _hosts_phrase(hosts)))
        problems.append('%s differs between hosts (%s); it applies to the whole run, so set it once for every host, '
                        'for example with -e or in group_vars/all' % (name, '; '.join(described)))


def host_status(pairs, play_hosts):
    """Which hosts answered this round's query, and the VM name of each.

    ``pairs``: ``[(host, result), ...]`` of the usable results (from
    ``_fleet.host_results``). Returns ``{'resource_names': {host: name},
    'unavailable': [hosts without a usable result]}``.
    """
    names = dict((host, result.get('resource_name')) for host, result in pairs if result.get('resource_name'))
    unavailable = [host for host in play_hosts if host not in names]
    return {'resource_names': names, 'unavailable': unavailable}


def event_row(event):
    """A fixed-width table row about one normalized event, for overviews.

    A value wider than its column is shown whole (the row is longer): the
    leader, a scale-set instance name, says who approves.
    """
    duration = event.get('duration_in_seconds')
    not_before = event.get('not_before')
    if not not_before:
        # Empty once Started; a Scheduled one IMDS gave in a form that could
        # not be read is shown as given.
        not_before = '(started)' if event.get('event_status') == 'Started' else event.get('not_before_raw') or '?'
    return '%-10s %-10s %-9s %-21s %-9s %-17s %s' % (
        event.get('event_status') or '?', event.get('event_type') or '?', event.get('event_source') or '-',
        not_before, '?' if duration in (None, -1) else '%ss' % duration,
        event.get('leader') or '-', event.get('event_id') or '?')


def format_epoch(epoch):
    """ISO 8601 UTC with milliseconds, or None."""
    if epoch is None:
        return None
    moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=float(epoch))
    return moment.strftime('%Y-%m-%dT%H:%M:%S.') + '%03dZ' % (moment.microsecond // 1000)


def _span(times, start, end):
    if times.get(start) is None or times.get(end) is None:
        return None
    return round(float(times[end]) - float(times[start]), 3)


# Timeline bars: (phase, from milestone, to milestones). The first "to"
# milestone present ends the bar, so an event that started without a drain
# still shows its notice and its impact.
PHASES = (
    ('notice', 'seen', ('drain_started', 'started')),
    ('drain', 'drain_started', ('drained', 'started')),
    ('approval', 'drained', ('approved', 'started')),
    ('starting', 'approved', ('started',)),
    ('impact', 'started', ('impact_over', 'gone')),
    ('verify', 'impact_over', ('verified',)),
    ('undrain', 'verified', ('undrained',)),
)

# Record fields the report shows as they are.
_REPORTED_FIELDS = ('event_id', 'event_type', 'event_source', 'description', 'duration_in_seconds',
                    'status_when_seen', 'status', 'not_before', 'resources', 'hosts', 'groups', 'foreign_resources',
                    'approver', 'state', 'reason', 'outcome_reason', 'undrained_at_start', 'verified_hosts',
                    'failed_hosts', 'errors', 'warnings', 'changes')


def build_report(state, run):
    """The report of a run, for the JSON file and the HTML page.

    ``state``: the planner's state at the end of the run. ``run``:
    ``{'started', 'finished'}`` epochs and anything else to show (groups,
    stop reason, rounds). Every event gets its outcome (see
    ``_rolling_controller.OUTCOMES``); the summary line and ``failed`` follow
    the worst outcome.
    """
    records = list(((state or {}).get('events') or {}).values())
    events = []
    for record in records:
        event = dict((key, record.get(key)) for key in _REPORTED_FIELDS)
        event['outcome'] = outcome_of(record)
        event['outcome_label'] = OUTCOME_LABELS[event['outcome']]
        times = record.get('times') or {}
        event['times'] = dict((name, format_epoch(times.get(name))) for name in MILESTONES)
        event['durations'] = {
            'notice': _span(times, 'seen', 'started'),
            'detection_to_approval': _span(times, 'seen', 'approved'),
            'drain': _span(times, 'drain_started', 'drained'),
            'approval_to_start': _span(times, 'approved', 'started'),
            'impact': _span(times, 'started', 'impact_over'),
            'verify': _span(times, 'impact_over', 'verified'),
            'total': _span(times, 'seen', 'undrained' if times.get('undrained') is not None else 'gone'),
        }
        event['_epochs'] = dict((name, times.get(name)) for name in MILESTONES)
        events.append(event)
    events.sort(key=lambda item: (item['_epochs'].get('seen') or float('inf'), item.get('event_id') or ''))

    start, end = run.get('started'), run.get('finished')
    epochs = [value for event in events for value in event['_epochs'].values() if value is not None]
    if start is None and epochs:
        start = min(epochs)
    if end is None and epochs:
        end = max(epochs)
    span = max((end or 0) - (start or 0), 0.001)
    for event in events:
        event['timeline'] = _timeline_bars(event['_epochs'], start or 0, span)
        del event['_epochs']

    counts = {}
    for event in events:
        counts[event['outcome']] = counts.get(event['outcome'], 0) + 1
    worst = worst_outcome(counts)
    # Hosts that never answered: the run cannot vouch for what happened there.
    unobserved = list((state or {}).get('unobserved_hosts') or [])
    # Hosts still out of service when the run ended (an undrain that kept
    # failing, say), whatever their events' outcomes say.
    left_drained = sorted(host for host, entry in ((state or {}).get('hosts') or {}).items()
                          if entry.get('drained') and not entry.get('deleted'))
    failed = any(name in FAILING_OUTCOMES for name in counts) or bool(unobserved) or bool(left_drained)
    order = [name for name, _label, _fails in OUTCOMES]
    parts = ['%d %s' % (counts[name], OUTCOME_LABELS[name]) for name in order if name in counts]
    if unobserved:
        parts.append('no answer all run from %s' % ', '.join(unobserved))
    if left_drained:
        parts.append('still drained: %s' % ', '.join(
            host + (' (%s)' % state['hosts'][host]['error'] if state['hosts'][host].get('error') else '')
            for host in left_drained))
    # Not a failure in itself (the outcomes say what it cost), but the run
    # could not vouch for every event's notice: say so where it is read.
    slow = dict((state or {}).get('slow_reads') or {})
    if slow.get('count'):
        parts.append('%d read(s) too far apart for the notice (up to %d s apart, notice %d s)' % (
            slow['count'], round(slow['longest_gap_seconds']), round(slow['shortest_notice_seconds'])))
    # Check mode stops after one round with every event still under way, and
    # its exit status never follows the outcomes: no verdict to give.
    verdict = 'planned' if run.get('check_mode') else 'FAILED' if failed else 'succeeded'
    summary = dict(run)
    summary.update(
        started=format_epoch(start), finished=format_epoch(end), wall_seconds=round(span, 3) if start is not None else 0,
        events=len(events), outcomes=counts, worst_outcome=worst, failed=failed, unobserved_hosts=unobserved,
        left_drained=left_drained,
        slow_reads=slow.get('count') or 0, longest_read_gap_seconds=slow.get('longest_gap_seconds'),
        summary='%s: %d event(s)%s' % (verdict, len(events), (': ' + ', '.join(parts)) if parts else ''),
        approved=sorted(event['event_id'] for event in events if event['times']['approved']))
    return {'run': summary, 'events': events, 'ticks': _ticks(span),
            'phases': [name for name, _begin, _ends in PHASES]}


def _timeline_bars(epochs, start, span):
    bars = []
    for name, begin, ends in PHASES:
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
