# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Ordered approval rules of the hook service.

A policy is an ordered list of rules; the first rule whose filters match an
event decides what happens to it: approve at once, approve once every prepare
hook succeeded, or never approve (NotBefore is left to pass). Pure functions
over normalized events, so the daemon, its ``--once`` dry run and the tests
agree on every decision.
"""

from .core._se_approval import duration_qualifies
from .core._se_document import EVENT_SOURCES, EVENT_TYPES
from .core._se_errors import InvalidParameterError
from .core._se_select import affects, filter_events, is_approvable, is_leader

ACTION_APPROVE = 'approve'
ACTION_APPROVE_AFTER_PREPARE = 'approve_after_prepare'
ACTION_NEVER = 'never'
ACTIONS = (ACTION_APPROVE, ACTION_APPROVE_AFTER_PREPARE, ACTION_NEVER)

# What approval_decision answers.
DECISION_APPROVE = 'approve'
DECISION_WAIT = 'wait'
DECISION_SKIP = 'skip'

# Outcome of an event's prepare phase as the daemon records it.
PREPARE_NOT_DONE = 'not_done'
PREPARE_SUCCEEDED = 'succeeded'
PREPARE_FAILED = 'failed'

_RULE_KEYS = ('name', 'event_types', 'event_sources', 'max_duration_seconds', 'action', 'leader_only',
              'ignore_hook_failures')
_POLICY_KEYS = ('rules', 'default_action', 'leader_only')


def _canonical_choices(values, known, where, field):
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, list):
        raise InvalidParameterError('%s: %s must be a list of %s' % (where, field, ', '.join(known)))
    by_lower = dict((choice.lower(), choice) for choice in known)
    canonical = []
    for value in values:
        choice = by_lower.get(str(value).lower())
        if choice is None:
            raise InvalidParameterError('%s: %s contains %r; use one of %s' % (where, field, value, ', '.join(known)))
        canonical.append(choice)
    return canonical


def _boolean(value, where, field):
    if value is None:
        return None
    if not isinstance(value, bool):
        raise InvalidParameterError('%s: %s must be true or false, got %r' % (where, field, value))
    return value


def _action(value, where, field):
    if value not in ACTIONS:
        raise InvalidParameterError('%s: %s is %r; use one of %s' % (where, field, value, ', '.join(ACTIONS)))
    return value


def validate_rule(rule, position):
    """Return a normalized copy of one rule, or raise InvalidParameterError naming rule and field."""
    where = 'approval rule %d' % (position + 1)
    if not isinstance(rule, dict):
        raise InvalidParameterError('%s must be a mapping with at least an action, got %r' % (where, rule))
    if rule.get('name'):
        where = '%s (%s)' % (where, rule['name'])
    unknown = sorted(set(rule) - set(_RULE_KEYS))
    if unknown:
        raise InvalidParameterError('%s: unknown key(s) %s; allowed keys are %s'
                                    % (where, ', '.join(unknown), ', '.join(_RULE_KEYS)))
    if 'action' not in rule:
        raise InvalidParameterError('%s has no action; use one of %s' % (where, ', '.join(ACTIONS)))
    max_duration = rule.get('max_duration_seconds')
    if max_duration is not None and (isinstance(max_duration, bool) or not isinstance(max_duration, int)
                                     or max_duration < 0):
        raise InvalidParameterError('%s: max_duration_seconds must be a whole number of seconds, 0 or more, got %r'
                                    % (where, max_duration))
    return {
        'name': str(rule.get('name') or '#%d' % (position + 1)),
        'event_types': _canonical_choices(rule.get('event_types'), EVENT_TYPES, where, 'event_types'),
        'event_sources': _canonical_choices(rule.get('event_sources'), EVENT_SOURCES, where, 'event_sources'),
        'max_duration_seconds': max_duration,
        'action': _action(rule.get('action'), where, 'action'),
        'leader_only': _boolean(rule.get('leader_only'), where, 'leader_only'),
        'ignore_hook_failures': bool(_boolean(rule.get('ignore_hook_failures'), where, 'ignore_hook_failures')),
    }


def validate_policy(policy):
    """Return a normalized policy ``{'rules', 'default_action', 'leader_only'}``.

    ``None`` means no rules: nothing is approved. Raises InvalidParameterError
    with the rule number and field when something cannot be used.
    """
    if policy is None:
        policy = {}
    if not isinstance(policy, dict):
        raise InvalidParameterError('approval must be a mapping with rules, default_action and leader_only')
    unknown = sorted(set(policy) - set(_POLICY_KEYS))
    if unknown:
        raise InvalidParameterError('approval: unknown key(s) %s; allowed keys are %s'
                                    % (', '.join(unknown), ', '.join(_POLICY_KEYS)))
    rules = policy.get('rules') or []
    if not isinstance(rules, list):
        raise InvalidParameterError('approval.rules must be a list of rules')
    leader_only = _boolean(policy.get('leader_only'), 'approval', 'leader_only')
    return {
        'rules': [validate_rule(rule, position) for position, rule in enumerate(rules)],
        'default_action': _action(policy.get('default_action', ACTION_NEVER), 'approval', 'default_action'),
        'leader_only': bool(leader_only),
    }


def rule_matches(rule, event):
    """True if every filter of a normalized rule accepts the event.

    Types and sources filter as everywhere in the collection; the duration
    filter is the approve module's: -1 (unknown) never counts as short.
    """
    if not filter_events([event], event_types=rule['event_types'], event_sources=rule['event_sources']):
        return False
    return rule['max_duration_seconds'] is None or duration_qualifies(event, rule['max_duration_seconds'])


def matching_rule(policy, event):
    """The first rule of a normalized policy matching ``event``, else the default rule."""
    for rule in policy['rules']:
        if rule_matches(rule, event):
            return rule
    return {'name': 'default', 'event_types': [], 'event_sources': [], 'max_duration_seconds': None,
            'action': policy['default_action'], 'leader_only': None, 'ignore_hook_failures': False}


def approval_decision(policy, event, resource_name, prepare_outcome):
    """Decide about approving one event now.

    ``prepare_outcome`` is PREPARE_NOT_DONE, PREPARE_SUCCEEDED or
    PREPARE_FAILED. Returns ``(decision, rule, reason)`` where decision is
    DECISION_APPROVE, DECISION_WAIT (ask again when prepare has finished) or
    DECISION_SKIP (never, for this event).
    """
    rule = matching_rule(policy, event)
    if not is_approvable(event):
        return DECISION_SKIP, rule, 'event is %s, only Scheduled events are approved' % event.get('event_status')
    if resource_name is None:
        # The event may be ours: approving it blind could release maintenance
        # of other VMs, and skipping it for good could lose ours.
        return DECISION_WAIT, rule, 'this VM\'s name is not known yet (IMDS identity lookup pending); approval waits'
    if not affects(event, resource_name):
        return DECISION_SKIP, rule, 'event does not list this VM (%s) in Resources' % resource_name
    if rule['action'] == ACTION_NEVER:
        return DECISION_SKIP, rule, 'rule %s never approves: NotBefore is left to pass' % rule['name']
    leader_only = policy['leader_only'] if rule['leader_only'] is None else rule['leader_only']
    if leader_only and not is_leader(event, resource_name):
        return DECISION_SKIP, rule, 'rule %s approves on the leader only and this VM is not the first of Resources' % rule['name']
    if rule['action'] == ACTION_APPROVE:
        return DECISION_APPROVE, rule, 'rule %s approves at once' % rule['name']
    if prepare_outcome == PREPARE_NOT_DONE:
        return DECISION_WAIT, rule, 'rule %s approves once the prepare hooks have run' % rule['name']
    if prepare_outcome == PREPARE_FAILED and not rule['ignore_hook_failures']:
        return DECISION_SKIP, rule, 'a prepare hook failed and rule %s does not ignore hook failures' % rule['name']
    return DECISION_APPROVE, rule, 'rule %s approves after the prepare hooks' % rule['name']
