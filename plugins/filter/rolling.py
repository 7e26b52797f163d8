# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters behind playbooks/rolling_maintenance.yml: rolling_setup, rolling_reconcile,
rolling_results, rolling_stop_reason, rolling_report, rolling_host_status, rolling_event_row.

Their documentation is in the .yml file named after each filter; the logic is
in plugin_utils/_rolling.py and plugin_utils/_rolling_controller.py. These
filters are the controller's I/O edge: they read hostvars and the clock, the
planner behind them does not.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import time
from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_select import event_id_key
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._fleet import (
    host_results,
    merge_fleet_events,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._rolling import (
    GROUP_SETTING_KEYS,
    HOST_TASK_VARIABLES,
    RUN_VARIABLES,
    build_report,
    build_setup,
    event_row,
    host_status,
    stop_reason,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._rolling_controller import (
    APPROVING,
    DRAINING,
    observe,
    reconcile,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._rolling_fleet import (
    outside_allowed_refusal,
)

# What each phase of a round does on a host, and the actions whose results it reports.
PHASE_ACTIONS = {'prepare': ('drain', 'verify'), 'release': ('approve', 'undrain')}


def _plain(value):
    """Ansible's lazy containers as plain dicts and lists, so the logic can copy and sort them."""
    if isinstance(value, Mapping):
        return dict((key, _plain(item)) for key, item in value.items())
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return [_plain(item) for item in value]
    return value


def _mapping(value, name, filter_name):
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise AnsibleFilterError('%s: %s must be a dictionary, got %s' % (filter_name, name, type(value).__name__))
    return _plain(value)


def _epoch(now):
    """``now`` as epoch seconds: a number, a datetime (from now()), or None for the controller's clock."""
    if now is None or now == '':
        return time.time()
    if isinstance(now, datetime.datetime):
        # A naive datetime is local time, as now() gives it.
        return now.timestamp()
    try:
        return float(now)
    except (TypeError, ValueError):
        raise AnsibleFilterError('now must be epoch seconds or a datetime, got %r' % (now,))


def _setup(setup, filter_name):
    setup = _mapping(setup, 'setup', filter_name)
    if 'groups' not in setup or 'hosts' not in setup:
        raise AnsibleFilterError('%s: setup must be the result of the rolling_setup filter' % filter_name)
    return setup


def rolling_setup(maintenance_groups, inventory_groups, play_hosts, group_settings=None, default_settings=None,
                  host_overrides=None, options=None, shipped_dir='', base_dir='.', hostvars=None):
    """Checked inputs and per-host settings of a rolling maintenance run.

    With ``hostvars``, each host's own ``rolling_*_tasks`` variables are read
    from it (unless ``host_overrides`` gives them), every ``rolling_*``
    variable name defined for a host or as an extra var is checked for typos,
    and the run-wide ones must have one value on every host.
    """
    play_hosts = _plain(play_hosts)
    host_overrides = _mapping(host_overrides, 'host_overrides', 'rolling_setup')
    options = _mapping(options, 'options', 'rolling_setup')
    run_variables = {}
    if isinstance(hostvars, Mapping):
        names = set(options.get('defined_variables') or [])
        for host in play_hosts:
            variables = hostvars[host] if host in hostvars else {}
            own = [name for name in variables if str(name).startswith('rolling_') or name in GROUP_SETTING_KEYS]
            names.update(own)
            for name in own:
                if name in RUN_VARIABLES:
                    run_variables.setdefault(name, {})[host] = _plain(variables.get(name))
            if host not in host_overrides:
                host_overrides[host] = dict((key, _plain(variables.get(name)))
                                            for key, name in HOST_TASK_VARIABLES.items())
                # The VM name, when the inventory knows it, before the host answers.
                host_overrides[host]['resource_name'] = _plain(variables.get('azure_scheduled_events_resource_name'))
        options['defined_variables'] = sorted(names)
    return build_setup(_plain(maintenance_groups), _mapping(inventory_groups, 'inventory_groups', 'rolling_setup'),
                       play_hosts, group_settings=_plain(group_settings), default_settings=_plain(default_settings),
                       host_overrides=host_overrides, options=options, shipped_dir=shipped_dir, base_dir=base_dir,
                       run_variables=run_variables)


def rolling_reconcile(state, setup, options=None, hostvars=None, result_key=None, answering=None, results=None,
                      now=None):
    """One pass of the planner.

    With ``result_key``, this round's observation is read from ``hostvars``:
    the registered scheduled_events_info result of every host of
    ``answering`` (the hosts still in the play); every other host of the run
    is unknown this round. Without it, only ``results`` are recorded.
    """
    setup = _setup(setup, 'rolling_reconcile')
    observation = None
    if result_key:
        if not isinstance(hostvars, Mapping):
            raise AnsibleFilterError('rolling_reconcile: hostvars must be given with result_key')
        alive = [host for host in _plain(answering or []) if host in setup['hosts']]
        pairs = host_results(hostvars, hosts=alive, result_key=result_key)
        observation = observe(pairs, list(setup['hosts']), merge_fleet_events(pairs))
    epoch = _epoch(now)
    out = reconcile(_plain(state) if state else None, observation, _mapping(results, 'results', 'rolling_reconcile'),
                    epoch, setup, _mapping(options, 'options', 'rolling_reconcile'))
    out['now'] = epoch
    out['unknown'] = observation['unknown'] if observation else []
    out['participants'] = participants(out)
    return out


def participants(plan):
    """The hosts that take part in the actions of a round: those ``plan`` asks something of, and the
    approvers of the events that may become approvable once the asked drains are done."""
    hosts = set((plan['actions'].get('hosts') or {}).keys())
    for record in plan['state']['events'].values():
        if record['state'] in (DRAINING, APPROVING) and record.get('approver'):
            hosts.add(record['approver'])
    return sorted(hosts)


def rolling_results(actions, hostvars, phase, fact='_rolling_step'):
    """What the hosts named in ``actions`` reported for ``phase`` (prepare or release).

    Each host sets ``fact`` to ``{action: error or ''}`` as it goes; an action
    a host was asked for but did not report (it became unreachable, its
    tasks were interrupted) is an error.
    """
    if phase not in PHASE_ACTIONS:
        raise AnsibleFilterError('rolling_results: phase must be one of %s, got %r'
                                 % (', '.join(sorted(PHASE_ACTIONS)), phase))
    actions = _mapping(actions, 'actions', 'rolling_results')
    results = dict((name, {}) for name in PHASE_ACTIONS[phase])
    for host, asked in sorted((actions.get('hosts') or {}).items()):
        reported = hostvars[host].get(fact) if host in hostvars else None
        reported = _plain(reported) if isinstance(reported, Mapping) else {}
        for name in PHASE_ACTIONS[phase]:
            if not asked.get(name):
                continue
            error = reported.get(name, 'no result from %s (unreachable, or its tasks were interrupted)' % host)
            if name == 'approve':
                posted = reported.get('approved_ids')
                posted = None if posted is None else set(event_id_key(event_id) for event_id in posted)
                refused = dict((event_id_key(entry.get('event_id')), entry) for entry in reported.get('refused') or ()
                               if isinstance(entry, Mapping))
                for event_id in asked['approve']:
                    results['approve'][event_id] = error
                    if not error and event_id_key(event_id) in refused:
                        results['approve'][event_id] = outside_allowed_refusal(refused[event_id_key(event_id)])
                    elif not error and posted is not None and event_id_key(event_id) not in posted:
                        # The task left it alone: it had started (or gone)
                        # by then, so Azure started it, not this approval.
                        results.setdefault('not_approved', []).append(event_id)
                    elif not error and reported.get('approved_at') not in (None, ''):
                        # When the POST was answered, not when the next round looked.
                        results.setdefault('approved_at', {})[event_id] = _epoch(reported['approved_at'])
            else:
                results[name][host] = error
    return results


def rolling_report(state, run=None):
    """The report (run summary, events with their milestones and outcome, timeline bars) of a run."""
    run = _mapping(run, 'run', 'rolling_report')
    for key in ('started', 'finished'):
        if run.get(key) not in (None, ''):
            run[key] = _epoch(run[key])
    if run.get('started') is not None and run.get('finished') is None:
        # The report is written as the run ends.
        run['finished'] = _epoch(None)
    return build_report(_mapping(state, 'state', 'rolling_report'), run)


def rolling_host_status(per_host, result_key, hosts):
    """Which hosts answered the query registered as ``result_key``, and their VM names."""
    hosts = _plain(hosts)
    return host_status(host_results(per_host, hosts=hosts, result_key=result_key), hosts)


def rolling_stop_reason(plan, options, started_at, check_mode=False):
    """Why the run ends after this round ('' to go on)."""
    plan = _mapping(plan, 'plan', 'rolling_stop_reason')
    if 'state' not in plan or 'now' not in plan:
        raise AnsibleFilterError('rolling_stop_reason: the input must be a plan made by rolling_reconcile or '
                                 'rolling_fleet_reconcile')
    return stop_reason(plan, _mapping(options, 'options', 'rolling_stop_reason'), _epoch(started_at),
                       bool(check_mode))


def rolling_event_row(event):
    """A table row about one event, for maintenance_overview.yml."""
    return event_row(_mapping(event, 'event', 'rolling_event_row'))


class FilterModule(object):

    def filters(self):
        return {
            'rolling_setup': rolling_setup,
            'rolling_reconcile': rolling_reconcile,
            'rolling_results': rolling_results,
            'rolling_report': rolling_report,
            'rolling_host_status': rolling_host_status,
            'rolling_event_row': rolling_event_row,
            'rolling_stop_reason': rolling_stop_reason,
        }
