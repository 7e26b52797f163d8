# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The documented handling loop, as pure functions over the saved state.

For an event new to the service: prepare. When it becomes Started: the
started hooks. When it disappears: recover. The result is a list of phases
due per event (kept in the state, so a restart resumes them) and a list of
notes saying what changed; nothing here runs hooks or does I/O, which is
what lets ``--once`` show what the daemon would do.
"""

import time

from .policy import PREPARE_FAILED, PREPARE_NOT_DONE, PREPARE_SUCCEEDED, approval_decision
from .core._se_select import annotate_event, event_id_key

PHASE_PREPARE = 'prepare'
PHASE_STARTED = 'started'
PHASE_RECOVER = 'recover'


def _now_iso():
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())


def stored_event(event, resource_name):
    """The event as kept in the state: normalized plus what it means for this VM."""
    annotated = annotate_event(event, resource_name)
    # Changes every second; computed afresh whenever an event is handed out.
    annotated.pop('seconds_until_not_before', None)
    return annotated


def phase_begun(record, phase):
    return phase in record['phases']


def _new_record(event, hooks_enabled):
    status = event.get('event_status')
    due = []
    if hooks_enabled:
        # Events that skip Scheduled (host hardware failure) are Started at
        # once: too late to prepare, but started and recover still apply.
        due = [PHASE_STARTED] if status == 'Started' else [PHASE_PREPARE]
    return {'event': event, 'present': True, 'first_seen': _now_iso(), 'hooks_enabled': hooks_enabled,
            'due': due, 'phases': {}, 'approved_at': None, 'approval': None}


def _enable_hooks_late(record):
    """An event whose Resources now list this VM gets the phases its status calls for."""
    record['hooks_enabled'] = True
    record['due'].append(PHASE_STARTED if record['event'].get('event_status') == 'Started' else PHASE_PREPARE)


def reconcile(state, document, resource_name, hooks_for_other_vms):
    """Fold a normalized document into ``state``; return the notes ``[(kind, event, detail)]``.

    Kinds: ``incarnation_reset``, ``new``, ``started``, ``changed``,
    ``prepare_skipped``, ``removed``.
    """
    notes = []
    records = state['events']
    order = state['event_order']
    incarnation = document['document_incarnation']
    previous = state.get('document_incarnation')
    if previous is not None and incarnation < previous:
        # IMDS disables Scheduled Events after 24 hours without a request and
        # counts from the start again; events are followed by id, so nothing
        # else changes.
        notes.append(('incarnation_reset', None, {'previous_incarnation': previous, 'document_incarnation': incarnation}))
    state['document_incarnation'] = incarnation
    present_keys = set()
    for raw_event in document['events']:
        key = event_id_key(raw_event.get('event_id'))
        if not key:
            continue
        present_keys.add(key)
        event = stored_event(raw_event, resource_name)
        record = records.get(key)
        if record is None:
            record = _new_record(event, event['affects_this_vm'] or hooks_for_other_vms)
            records[key] = record
            order.append(key)
            notes.append(('new', event, {'hooks': bool(record['hooks_enabled'])}))
            continue
        before = record['event']
        if not record['present']:
            # Back after it was gone: the recover not yet begun is moot.
            record['present'] = True
            if PHASE_RECOVER in record['due'] and not phase_begun(record, PHASE_RECOVER):
                record['due'].remove(PHASE_RECOVER)
        record['event'] = event
        if not record['hooks_enabled'] and (event['affects_this_vm'] or hooks_for_other_vms):
            _enable_hooks_late(record)
        if event.get('event_status') == 'Started' and before.get('event_status') != 'Started':
            if record['hooks_enabled']:
                if PHASE_PREPARE in record['due'] and not phase_begun(record, PHASE_PREPARE):
                    record['due'].remove(PHASE_PREPARE)
                    notes.append(('prepare_skipped', event, {'reason': 'the event Started before its prepare hooks '
                                                                       'could begin'}))
                if not phase_begun(record, PHASE_STARTED) and PHASE_STARTED not in record['due']:
                    record['due'].append(PHASE_STARTED)
            notes.append(('started', event, {}))
        elif event != before:
            notes.append(('changed', event, {}))
    for key in order:
        record = records[key]
        if record['present'] and key not in present_keys:
            record['present'] = False
            if record['hooks_enabled']:
                # Every event whose hooks were due gets exactly one recover,
                # cancelled ones included; phases that never began are moot.
                record['due'] = [phase for phase in record['due'] if phase_begun(record, phase)]
                if not phase_begun(record, PHASE_RECOVER):
                    record['due'].append(PHASE_RECOVER)
            notes.append(('removed', record['event'], {}))
    return notes


def retire_finished(state, history_limit):
    """Move events that are gone and have no phase due into the bounded history."""
    for key in list(state['event_order']):
        record = state['events'][key]
        if not record['present'] and not record['due']:
            state['event_order'].remove(key)
            del state['events'][key]
            state['history'].append(record)
    del state['history'][:-history_limit]


def next_job(state):
    """``(key, phase)`` of the next phase to run (events in the order first seen), or None."""
    for key in state['event_order']:
        record = state['events'][key]
        if record['due']:
            return key, record['due'][0]
    return None


def prepare_outcome(record):
    """How the event's prepare phase ended, as the approval policy needs it."""
    phase = record['phases'].get(PHASE_PREPARE)
    if phase is None or not phase.get('finished'):
        return PREPARE_NOT_DONE if record['hooks_enabled'] else PREPARE_SUCCEEDED
    return PREPARE_SUCCEEDED if phase.get('succeeded') else PREPARE_FAILED


def approvals_due(state, policy, resource_name, assume_prepare_succeeds=False):
    """Decide about every present, unapproved event; return ``(keys_to_approve, decisions)``.

    ``decisions`` maps each key to ``(decision, rule_name, reason)``. With
    ``assume_prepare_succeeds`` an unfinished prepare counts as a success
    (what ``--once`` shows).
    """
    keys, decisions = [], {}
    for key in state['event_order']:
        record = state['events'][key]
        if not record['present'] or record['approved_at']:
            continue
        outcome = prepare_outcome(record)
        if assume_prepare_succeeds and outcome == PREPARE_NOT_DONE:
            outcome = PREPARE_SUCCEEDED
        decision, rule, reason = approval_decision(policy, record['event'], resource_name, outcome)
        decisions[key] = (decision, rule['name'], reason)
        if decision == 'approve':
            keys.append(key)
    return keys, decisions
