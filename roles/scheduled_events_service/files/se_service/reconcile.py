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
from .core._se_poller import CHANGE_CHANGED, CHANGE_REMOVED, CHANGE_STARTED, annotate_for_identity, track_changes
from .core._se_select import event_id_key

PHASE_PREPARE = 'prepare'
PHASE_STARTED = 'started'
PHASE_RECOVER = 'recover'


def _now_iso():
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())


def stored_event(event, resource_name):
    """The event as kept in the state: normalized plus what it means for this VM.

    While this VM's name is unknown (``resource_name`` None), whether the
    event affects it, and whether it leads, are None: possibly.
    """
    annotated = annotate_for_identity(event, resource_name)
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
    record['recover_only'] = False
    phase = PHASE_STARTED if record['event'].get('event_status') == 'Started' else PHASE_PREPARE
    if not phase_begun(record, phase) and phase not in record['due']:
        record['due'].append(phase)


def _disable_hooks_late(record):
    """An event whose hooks began while this VM's name was unknown, now known not to be this VM's.

    Returns True when it had hooks no phase of which began: they are dropped.
    An event whose prepare hooks ran keeps only its recover, to undo them.
    """
    if not record['phases']:
        record['hooks_enabled'] = False
        record['due'] = []
        return True
    record['recover_only'] = True
    record['due'] = [phase for phase in record['due'] if phase == PHASE_RECOVER or phase_begun(record, phase)]
    return False


def _rejudge_hooks(record, hooks_for_other_vms, notes):
    """Switch an event's hooks on or off as what is known now of this VM's name says."""
    applies = _hooks_apply(record['event'], hooks_for_other_vms)
    if applies and (not record['hooks_enabled'] or record.get('recover_only')):
        _enable_hooks_late(record)
    elif not applies and record['hooks_enabled'] and not record.get('recover_only'):
        dropped = _disable_hooks_late(record)
        notes.append(('hooks_dropped', record['event'], {'recover_runs': not dropped}))


def _hooks_apply(event, hooks_for_other_vms):
    # None: this VM's name is not known yet, so the event is possibly ours
    # and preparing for it is the safe side; approving waits for the name.
    return event['affects_this_vm'] is not False or hooks_for_other_vms


def reconcile(state, document, resource_name, hooks_for_other_vms):
    """Fold a normalized document into ``state``; return the notes ``[(kind, event, detail)]``.

    Kinds: ``incarnation_reset``, ``new``, ``started``, ``changed``,
    ``prepare_skipped``, ``started_skipped``, ``hooks_dropped``, ``removed``. What changed is found by the core's
    change tracker, against the events the state holds as present.
    ``resource_name`` None means this VM's name is not known yet.
    """
    notes = []
    records = state['events']
    order = state['event_order']
    present = [records[key]['event'] for key in order if records[key]['present']]
    changes = track_changes(present, state.get('document_incarnation'), document)
    if changes.incarnation_reset:
        # IMDS disables Scheduled Events after 24 hours without a request and
        # counts from the start again; events are followed by id, so nothing
        # else changes.
        previous, incarnation = changes.incarnation_reset
        notes.append(('incarnation_reset', None, {'previous_incarnation': previous, 'document_incarnation': incarnation}))
    state['document_incarnation'] = document['document_incarnation']
    for kind, raw_event, dummy in changes.items:
        key = event_id_key(raw_event.get('event_id'))
        if not key:
            continue
        record = records.get(key)
        if kind == CHANGE_REMOVED:
            record['present'] = False
            if record['hooks_enabled']:
                # Every event whose hooks were due gets exactly one recover,
                # cancelled ones included; phases that never began are moot.
                if PHASE_STARTED in record['due'] and not phase_begun(record, PHASE_STARTED):
                    notes.append(('started_skipped', record['event'], {
                        'reason': 'the event was gone before its started hooks could begin'}))
                record['due'] = [phase for phase in record['due'] if phase_begun(record, phase)]
                if not phase_begun(record, PHASE_RECOVER):
                    record['due'].append(PHASE_RECOVER)
            notes.append(('removed', record['event'], {}))
            continue
        event = stored_event(raw_event, resource_name)
        if record is None:
            record = _new_record(event, _hooks_apply(event, hooks_for_other_vms))
            records[key] = record
            order.append(key)
            notes.append(('new', event, {'hooks': bool(record['hooks_enabled'])}))
            continue
        if not record['present']:
            # Back after it was gone: the recover not yet begun is moot; what
            # changed is judged against the event as it was when it left.
            record['present'] = True
            if PHASE_RECOVER in record['due'] and not phase_begun(record, PHASE_RECOVER):
                record['due'].remove(PHASE_RECOVER)
            kind = _change_since(record['event'], event)
        record['event'] = event
        _rejudge_hooks(record, hooks_for_other_vms, notes)
        if kind == CHANGE_STARTED:
            if record['hooks_enabled'] and not record.get('recover_only'):
                if PHASE_PREPARE in record['due'] and not phase_begun(record, PHASE_PREPARE):
                    record['due'].remove(PHASE_PREPARE)
                    notes.append(('prepare_skipped', event, {'reason': 'the event Started before its prepare hooks '
                                                                       'could begin'}))
                if not phase_begun(record, PHASE_STARTED) and PHASE_STARTED not in record['due']:
                    record['due'].append(PHASE_STARTED)
            notes.append(('started', event, {}))
        elif kind == CHANGE_CHANGED:
            notes.append(('changed', event, {}))
    _refresh_identity(state, resource_name, hooks_for_other_vms, notes)
    return notes


def _change_since(before, after):
    """The change kind from ``before`` to ``after`` of one event (None when nothing changed)."""
    items = track_changes([before], None, {'document_incarnation': 0, 'events': [after]}).items
    return items[0][0] if items else None


def _refresh_identity(state, resource_name, hooks_for_other_vms, notes):
    """Re-judge present events for this VM: its name may have become known (or changed) since they were stored."""
    for key in state['event_order']:
        record = state['events'][key]
        if not record['present']:
            continue
        refreshed = stored_event(record['event'], resource_name)
        if refreshed != record['event']:
            record['event'] = refreshed
            _rejudge_hooks(record, hooks_for_other_vms, notes)


def retire_finished(state, history_limit):
    """Move events that are gone and have no phase due into the bounded history."""
    for key in list(state['event_order']):
        record = state['events'][key]
        if not record['present'] and not record['due']:
            state['event_order'].remove(key)
            del state['events'][key]
            state['history'].append(record)
    del state['history'][:-history_limit]


def next_job(state, recover_only=False):
    """``(key, phase)`` of the next phase to run (events in the order first seen), or None.

    ``recover_only``: only recover phases, which concern events already gone
    (what the service does before its first poll has said what is still true).
    """
    for key in state['event_order']:
        record = state['events'][key]
        if record['due'] and (not recover_only or record['due'][0] == PHASE_RECOVER):
            return key, record['due'][0]
    return None


def prepare_outcome(record, resource_name=None):
    """How the event's prepare phase ended, as the approval policy needs it.

    An event without hooks has nothing to wait for, unless ``resource_name``
    (this VM's name now) shows it is this VM's: the name changed (a reload)
    since the last poll judged it, and its prepare hooks are still to come.
    """
    phase = record['phases'].get(PHASE_PREPARE)
    if phase is None or not phase.get('finished'):
        if record['hooks_enabled']:
            return PREPARE_NOT_DONE
        ours_now = resource_name is not None and stored_event(record['event'], resource_name)['affects_this_vm']
        return PREPARE_NOT_DONE if ours_now else PREPARE_SUCCEEDED
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
        if not record['present'] or record['approved_at'] or record.get('approving_at'):
            # approving_at: a POST may have gone out before the service
            # stopped; sending it again after a restart is what must not happen.
            continue
        outcome = prepare_outcome(record, resource_name)
        if assume_prepare_succeeds and outcome == PREPARE_NOT_DONE:
            outcome = PREPARE_SUCCEEDED
        decision, rule, reason = approval_decision(policy, record['event'], resource_name, outcome)
        decisions[key] = (decision, rule['name'], reason)
        if decision == 'approve':
            keys.append(key)
    return keys, decisions
