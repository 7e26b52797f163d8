# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rolling controller's second source: the fleet plane (Resource Graph, ARM acknowledge). Internal use only.

With ``rolling_source: resource_graph`` one Resource Graph read per round
replaces the IMDS reading of every host. This module turns that read into
the same observation ``_rolling_controller.observe`` builds from IMDS, so
the same planner (and every safety rule in it) decides; and it turns the
ARM acknowledge result into the planner's ``approve`` results.

Matching: a host is the VM its inventory names (``azure_scheduled_events_resource_name``,
or ``name`` next to an Azure VM ``id`` as the ``azure.azcollection.azure_rm``
inventory sets them), and, when its ARM id is known (``azure_scheduled_events_arm_id``
or that ``id``), only that VM: a Resources entry is resolved to an ARM id
through the event's own rows, and a VM of the same name elsewhere (another
resource group or subscription) is a VM outside the run.

What Resource Graph says, in IMDS terms:

- Scheduled and Started rows are the document's events. A host "answered"
  when the read succeeded, except while an event naming it is Started:
  outside the VM nothing says its impact is over until Resource Graph says
  Completed, so until then the host counts as out (max_unavailable) and is
  not verified;
- Completed: the event is over. Once the planner has seen it start (or
  approved it), it is left out, as IMDS drops a finished event; the first
  time it is shown as Started, so a start between two reads is still
  accounted for (drained or not). A Completed or Canceled event this run
  never saw live is history and is ignored;
- Canceled: left out, as IMDS drops a cancelled event.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_allowed_vms import (
    SKIP_FOREIGN_VMS,
    parse_arm_vm_id,
)
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_graph import parse_arm_event_id
from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_select import event_id_key

SOURCE_IMDS = 'imds'
SOURCE_RESOURCE_GRAPH = 'resource_graph'
SOURCES = (SOURCE_IMDS, SOURCE_RESOURCE_GRAPH)

# Skip reasons of scheduled_events_fleet_approve that leave nothing to do:
# the event started or ended meanwhile, as an IMDS approval with missing: ignore.
_ACK_DONE_REASONS = ('already_started', 'gone', 'finished')

_VM_ID = re.compile(
    r'^/subscriptions/(?P<subscription>[^/]+)/resourcegroups/(?P<group>[^/]+)/providers/microsoft\.compute/'
    r'(?:virtualmachines/(?P<vm>[^/]+)'
    r'|virtualmachinescalesets/(?P<scale_set>[^/]+)/virtualmachines/(?P<instance>[^/]+))$',
    re.IGNORECASE)


def vm_arm_id(value):
    """The canonical (lower-case) ARM id of a VM or scale-set instance, or None if ``value`` is not one."""
    match = _VM_ID.match(str(value or '').strip().rstrip('/'))
    if match is None:
        return None
    parts = match.groupdict()
    prefix = '/subscriptions/%s/resourcegroups/%s/providers/microsoft.compute/' % (parts['subscription'],
                                                                                   parts['group'])
    if parts['vm']:
        return (prefix + 'virtualmachines/' + parts['vm']).lower()
    return (prefix + 'virtualmachinescalesets/%s/virtualmachines/%s' % (parts['scale_set'], parts['instance'])).lower()


# The host variables host_identity reads: ours, then those of the azure_rm inventory.
IDENTITY_VARIABLES = ('azure_scheduled_events_arm_id', 'id', 'azure_scheduled_events_resource_name', 'name')


def host_identity(variables, inventory_resource_name=None):
    """``{'resource_name', 'arm_id'}`` of a host from its variables (either may be None)."""
    variables = variables or {}
    arm_id = vm_arm_id(variables.get('azure_scheduled_events_arm_id')) or vm_arm_id(variables.get('id'))
    name = variables.get('azure_scheduled_events_resource_name') or inventory_resource_name
    if not name and arm_id and variables.get('name'):
        # azure_rm: "name" is the VM's name exactly when "id" is its ARM id.
        name = variables.get('name')
    return {'resource_name': str(name) if name else None, 'arm_id': arm_id}


def check_identities(identities):
    """Problems (sentences) that make the fleet plane unusable for this run."""
    problems = []
    by_name = {}
    for host in sorted(identities):
        name = identities[host].get('resource_name')
        if name:
            by_name.setdefault(name.lower(), []).append(host)
    for name, hosts in sorted(by_name.items()):
        if len(hosts) > 1:
            problems.append('hosts %s are all VM %r: with rolling_source resource_graph every host of the run must '
                            'be a different VM (set azure_scheduled_events_resource_name and '
                            'azure_scheduled_events_arm_id per host)' % (', '.join(hosts), name))
    return problems


def read_scope(identities, options):
    """``{'subscriptions', 'resource_groups'}`` for the one query of a round.

    Given in ``rolling_fleet_options`` they are used as they are; otherwise
    they are those of the hosts' ARM ids (resource groups only when every
    host's ARM id is known, so that no host is left out).
    """
    options = options or {}
    ids = [identity.get('arm_id') for identity in identities.values()]
    known = [_VM_ID.match(arm_id).groupdict() for arm_id in ids if arm_id]
    subscriptions = options.get('subscriptions') or sorted(set(parts['subscription'] for parts in known))
    groups = options.get('resource_groups')
    if not groups and known and len(known) == len(ids):
        groups = sorted(set(parts['group'] for parts in known))
    return {'subscriptions': list(subscriptions or []) or None, 'resource_groups': list(groups or []) or None}


def _resolve(name, rows):
    """The canonical ARM id of the VM the Resources entry ``name`` denotes, through the event's rows."""
    lowered = str(name).lower()
    for parts in rows:
        prefix = '/subscriptions/%s/resourcegroups/%s/providers/microsoft.compute/' % (
            parts['subscription_id'], parts['resource_group'])
        owner = parts['resource_name'].lower()
        if parts['resource_kind'] == 'virtualMachines' and owner == lowered:
            return (prefix + 'virtualmachines/' + owner).lower()
        if parts['resource_kind'] == 'virtualMachineScaleSets' and lowered.startswith(owner + '_'):
            instance = lowered[len(owner) + 1:]
            if instance.isdigit():
                return (prefix + 'virtualmachinescalesets/%s/virtualmachines/%s' % (owner, instance)).lower()
    return None


def resources_as_named(event, identities):
    """The event's Resources, with a VM that only shares its name with a host's VM replaced by its ARM id."""
    rows = [parts for parts in (parse_arm_event_id(arm_id) for arm_id in event.get('arm_ids') or []) if parts]
    by_name = dict((identity['resource_name'].lower(), identity) for identity in identities.values()
                   if identity.get('resource_name'))
    resources = []
    for name in event.get('resources') or []:
        identity = by_name.get(str(name).lower())
        resolved = _resolve(name, rows)
        if identity is not None and (identity.get('arm_id') is None or resolved is None
                                     or identity['arm_id'] == resolved):
            resources.append(identity['resource_name'])
        elif identity is not None:
            # Another VM of the same name as a host's (elsewhere in Azure):
            # its ARM id keeps it apart, as a VM outside the run.
            resources.append(resolved)
        else:
            resources.append(str(name))
    return resources


def fleet_observation(read, identities, hosts, state=None):
    """The planner's observation of one round from a scheduled_events_fleet_info result.

    ``read``: the registered result (failed or missing: every host is unknown
    this round and no event is considered gone); ``identities``: ``{host:
    host_identity(...)}``; ``hosts``: every host of the run; ``state``: the
    planner's state so far. Returns ``(observation, warnings)``.
    """
    names = dict((host, (identities.get(host) or {}).get('resource_name')) for host in hosts)
    if not isinstance(read, dict) or read.get('failed') or read.get('skipped') or \
            not isinstance(read.get('events'), list):
        why = (read or {}).get('msg') if isinstance(read, dict) else None
        observation = {'hosts': dict((host, {'ok': False, 'resource_name': names[host]}) for host in hosts),
                       'resource_names': {}, 'unknown': list(hosts), 'events': []}
        return observation, ['Resource Graph was not read this round: %s' % (why or 'no result')]
    records = (state or {}).get('events') or {}
    host_of = dict((name.lower(), host) for host, name in names.items() if name)
    events, impacted = [], set()
    for event in read['events']:
        record = records.get(event_id_key(event.get('event_id')))
        status = str(event.get('event_status'))
        if status == 'Canceled':
            continue
        if status == 'Completed':
            if record is None or record['times'].get('started') is not None or \
                    record['times'].get('approved') is not None:
                continue
            status = 'Started'
        resources = resources_as_named(event, identities)
        mine = [host_of[name.lower()] for name in resources if name.lower() in host_of]
        if status == 'Started':
            impacted.update(mine)
        view = dict(event, event_status=status, resources=resources, seen_by=mine, hosts=mine)
        if status == 'Started':
            view['not_before'] = None
        events.append(view)
    answered = dict((host, name) for host, name in names.items() if name and host not in impacted)
    observation = {
        'hosts': dict((host, {'ok': host in answered, 'resource_name': names[host]}) for host in hosts),
        'resource_names': dict((host, name) for host, name in names.items() if name),
        'unknown': [host for host in hosts if host not in answered],
        'events': events,
        # A row can show Scheduled minutes after the event started.
        'lagging': True,
    }
    warnings = ['%s has no VM name (set azure_scheduled_events_resource_name, or use the azure_rm inventory): '
                'its events cannot be matched' % host for host in hosts if not names[host]]
    return observation, warnings


def outside_allowed_refusal(skipped):
    """What the planner notes of an event the approve task skipped as ``foreign_vms``.

    The task was given the VMs the event named at the round's read (all
    drained), so Azure has added a VM to it since: the next round drains that
    VM before the event is approved again.
    """
    return 'refused: it now names %s, outside allowed_vms (the VMs it named when the round read it)' % (
        ', '.join(str(name) for name in skipped.get('foreign_vms') or ()) or 'other VMs')


def approval_results(approve, ack, now):
    """The planner's ``approve`` results from a scheduled_events_fleet_approve result.

    ``approve``: the plan's ``{approver host: [event ids]}``; ``ack``: the
    registered result (a failure still lists what was acknowledged before
    it). An event acknowledged, or found started or over meanwhile, went well.
    """
    ack = ack if isinstance(ack, dict) else {}
    acknowledged = set(event_id_key(event_id) for event_id in ack.get('approved') or [])
    done = set(event_id_key(entry.get('event_id')) for entry in ack.get('skipped_events') or []
               if entry.get('reason') in _ACK_DONE_REASONS)
    skipped = dict((event_id_key(entry.get('event_id')), entry) for entry in ack.get('skipped_events') or [])
    results = {'approve': {}, 'approved_at': {}}
    for event_ids in approve.values():
        for event_id in event_ids:
            key = event_id_key(event_id)
            if key in acknowledged:
                results['approve'][event_id] = ''
                results['approved_at'][event_id] = now
            elif key in done:
                # Started, over or gone before the acknowledge: not this run's approval.
                results['approve'][event_id] = ''
                results.setdefault('not_approved', []).append(event_id)
            elif key in skipped and skipped[key].get('reason') == SKIP_FOREIGN_VMS:
                results['approve'][event_id] = 'not acknowledged through ARM: %s' % outside_allowed_refusal(skipped[key])
            elif key in skipped:
                results['approve'][event_id] = 'not acknowledged through ARM (%s)' % skipped[key].get('reason')
            else:
                results['approve'][event_id] = 'not acknowledged through ARM: %s' % (
                    ack.get('msg') or 'no result')
    return results


def without_approvals(actions):
    """``actions`` with nothing left for the hosts to approve: the controller acknowledged through ARM."""
    hosts = {}
    for host, asked in (actions.get('hosts') or {}).items():
        asked = dict(asked, approve=[])
        if asked.get('drain') or asked.get('verify') or asked.get('undrain'):
            hosts[host] = asked
    return dict(actions, approve={}, hosts=hosts)


def acknowledgeable_vms(actions, identities):
    """The ``allowed_vms`` of the round's one ARM acknowledgement: every VM the events it sends named when read.

    ``actions``: the plan's actions (each approver's ``allowed_vms`` are the
    VMs its events named at the round's read: the run's hosts, all drained,
    and, with ``rolling_allow_foreign_resources``, the VMs outside the run
    that the user let the run release). Not every VM of the run: a Resource
    Graph row can change between the read and the acknowledgement (Azure adds
    a VM), and a VM added since is not drained; nor only the run's VMs, or an
    event the run may approve with a VM outside it would always be refused.
    A host's VM goes by its ARM id where known, which allows that VM in its
    own resource group only (a bare name that the acknowledgement's read
    finds in several resource groups allows none of them).
    """
    arm_ids = {}
    for identity in identities.values():
        parts = parse_arm_vm_id(identity.get('arm_id'))
        name = identity.get('resource_name')
        # A scale-set instance's id is not a VM id that allowed_vms pins: it goes by its name.
        if name and parts and parts['resource_name'].lower() == name.lower():
            arm_ids[name.lower()] = identity['arm_id']
    named = set()
    for asked in (actions.get('hosts') or {}).values():
        if asked.get('approve'):
            named.update(str(name) for name in asked.get('allowed_vms') or ())
    return sorted(set(arm_ids.get(name.lower(), name) for name in named))


def needs_the_hosts(plan):
    """Whether the round that made ``plan`` has anything for the hosts or the user: a host to drain,
    verify, approve from or undrain, an event to acknowledge, a change to say or a warning.

    A host merely not seen is not enough: over the fleet plane every host under
    a Started event is unseen until Resource Graph says Completed, and asking
    every host then would cost a task per host for each round of the impact.
    A read that failed, or a host that cannot be matched, comes with a warning.
    """
    return bool(plan.get('participants') or (plan.get('actions') or {}).get('approve') or plan.get('messages')
                or plan.get('warnings'))


def watch_fleet(state, results, read, plan_round, stop_reason_of, poll_interval_seconds, clock, sleep,
                check_mode=False):
    """Observe and plan, round after round, without the hosts, until a round needs them or the run must stop.

    With the fleet plane a round that only observes needs no host: one read
    of Resource Graph sees every VM, and the planner decides in Python. Such
    rounds run here, ``poll_interval_seconds`` apart, at the cost of one read
    and one pass of the planner, whatever the size of the fleet. The first
    round that has something for the hosts (see ``needs_the_hosts``), or after
    which the run stops (``stop_reason_of(plan)`` not empty), is returned to
    the playbook, which acts on it. The rounds bound the loop: every round
    counts towards ``max_rounds``, and the time budget ends it too.

    ``read()`` returns a scheduled_events_fleet_info result; ``plan_round(state,
    read, results)`` a plan; ``results`` (what the hosts reported since the
    last round) feed the first round only. Returns ``{'plan', 'rounds', 'stop'}``.
    """
    rounds = 0
    while True:
        plan = plan_round(state, read(), results)
        rounds += 1
        results = {}
        stop = stop_reason_of(plan)
        if check_mode or stop or needs_the_hosts(plan):
            return {'plan': plan, 'rounds': rounds, 'stop': stop}
        state = plan['state']
        pause = float(plan['now']) + float(poll_interval_seconds) - clock()
        if pause > 0:
            sleep(pause)
