# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running the scenario once on a fresh stage and reading what happened."""

import datetime
import time

from .rolling_stage import RollingStage, scenario_event_ids


def epoch_of(iso_text):
    return datetime.datetime.fromisoformat(iso_text.replace('Z', '+00:00')).timestamp()


def run_scenario(workdir, drain=True, approve=True, settle_seconds=1.0, steps=None, **stage_options):
    """Run the maintenance scenario (or ``steps`` of it) under load with the rolling playbook.

    Returns a dict with the playbook's exit code, log, seconds, the load
    summary, the simulator's approvals, events and impacts, the requests
    frozen backends held, HAProxy's state changes and the report.
    """
    with RollingStage(workdir, **stage_options) as stage:
        load = stage.start_load()
        time.sleep(settle_seconds)
        stage.start_scenario(steps)
        scenario_started = time.time()
        # Whatever this machine's speed, the run sees every event Started
        # that it should (the hardware failure, the foreign Freeze).
        code, log_path, seconds = stage.run_playbook_pacing_clock(drain=drain, approve=approve)
        quiet = stage.wait_until_quiet(120)
        time.sleep(settle_seconds)
        if load is not None:
            load.stop()
        report, report_html = stage.latest_report()
        result = {
            'stage': stage,
            'code': code, 'log': log_path, 'seconds': seconds, 'scenario_started': scenario_started,
            'quiet': quiet,
            'load': load.summary() if load is not None else None,
            'approvals': [approval for approval in stage.control.approvals() if approval['status'] == 200],
            'events': dict((event['id'], event) for event in stage.control.state()['events']),
            'impacts': stage.fleet.impact_log(),
            'held_by_freeze': stage.fleet.held_by_freeze(),
            'haproxy_changes': list(stage.watcher.changes) if stage.watcher is not None else [],
            'report': report, 'report_html': report_html,
        }
    return result


def approval_posts_by_event(approvals):
    """Event id -> the approval POSTs that named it."""
    posts = dict((event_id, []) for event_id in scenario_event_ids())
    for approval in approvals:
        for event_id in approval['event_ids']:
            posts.setdefault(event_id.upper(), []).append(approval)
    return posts


def undrained_at_approval(result):
    """[(event id, host, state seen)] of affected hosts not drained when their event was approved."""
    stage = result['stage']
    problems = []
    for approval in result['approvals']:
        moment = epoch_of(approval['real_time'])
        for event_id in approval['event_ids']:
            for vm_name in result['events'][event_id.upper()]['resources']:
                host = stage.host_of(vm_name)
                if host is None:
                    continue
                state = _state_at(result['haproxy_changes'], host, moment)
                if state is None or not (state['admin'] & 0x09) or state.get('sessions', 1) != 0:
                    problems.append((event_id, host, state))
    return problems


def _state_at(changes, server, moment):
    found = None
    for change in changes:
        if change['server'] == server and change['time'] <= moment:
            found = change
    return found


def summary_mismatches(report, approvals, world_events):
    """Where the report disagrees with the simulator's logs: approvals, starts, cancellations.

    ``approvals`` are the simulator's accepted approval POSTs, ``world_events``
    its events by id. The demo prints these; the e2e test requires none.
    """
    mismatches = []
    approved_in_simulator = set(event_id.lower() for entry in approvals for event_id in entry['event_ids'])
    approved_in_report = set(event_id.lower() for event_id in report['run']['approved'])
    if approved_in_simulator != approved_in_report:
        mismatches.append('approved: simulator %s, report %s'
                          % (sorted(approved_in_simulator), sorted(approved_in_report)))
    for event in report['events']:
        world = dict((key.lower(), value) for key, value in world_events.items()).get(event['event_id'].lower())
        if world is None:
            mismatches.append('%s is not in the simulator' % event['event_id'])
            continue
        started = world['started_at'] is not None
        if started != (event['times']['started'] is not None):
            mismatches.append('%s: started in the simulator: %s, in the report: %s'
                              % (event['event_id'], started, event['times']['started']))
        if (world['status'] == 'Cancelled') != (event['outcome'] == 'cancelled'):
            mismatches.append('%s: simulator status %s, report outcome %s'
                              % (event['event_id'], world['status'], event['outcome']))
    return mismatches


def log_tail(path, lines=60):
    with open(path) as handle:
        return ''.join(handle.readlines()[-lines:])
