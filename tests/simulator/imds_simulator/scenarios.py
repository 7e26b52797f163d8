"""Scenarios: timed scripts of control actions, and the built-in ones.

A step fires either ``at_seconds`` simulated seconds after the scenario
started, or ``delay_seconds`` after an event (named by id or by the label of
the step that created it) was removed or cancelled. That second trigger is
how update domains follow one another: the next only once the previous one
has finished.
"""

import copy

from .clock import epoch_of_utc, format_iso

__all__ = ['ScenarioError', 'BUILTIN_SCENARIOS', 'build_scenario', 'ScenarioRun']

ACTIONS = {
    'create_event': (),
    'cancel_event': ('event',),
    'change_event': ('event',),
    'start_event': ('event',),
    'tenants_approved': ('event',),
    'advance_clock': ('seconds',),
    'set_clock': ('set',),
    'set_speed': ('speed',),
    'disable_vm': ('vm',),
    'add_fault': ('fault',),
    'set_throttle': ('throttle',),
}
_TRIGGER_KEYS = ('at_seconds', 'after_removed', 'delay_seconds', 'label', 'action')

WESTNO_EVENT_ID = 'C7061BAC-AFDC-4513-B24B-AA5F13A16123'


class ScenarioError(ValueError):
    """A scenario request is malformed or does not fit the current world."""


def _number(step, key, where):
    value = step.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ScenarioError('%s.%s must be a number of simulated seconds >= 0, got %r' % (where, key, value))
    return value


def check_steps(steps):
    """Normalized copies of ``steps``; ScenarioError names the bad step."""
    if not isinstance(steps, list) or not steps:
        raise ScenarioError('steps must be a non-empty list of {"at_seconds" or "after_removed", "action", ...}')
    checked, labels = [], set()
    for index, step in enumerate(steps):
        where = 'steps[%d]' % index
        if not isinstance(step, dict):
            raise ScenarioError('%s must be an object, got %r' % (where, step))
        action = step.get('action')
        if action not in ACTIONS:
            raise ScenarioError('%s.action must be one of %s, got %r' % (where, ', '.join(sorted(ACTIONS)), action))
        for required in ACTIONS[action]:
            if required not in step:
                raise ScenarioError('%s: action %s needs "%s"' % (where, action, required))
        if 'at_seconds' in step and 'after_removed' in step:
            raise ScenarioError('%s: give at_seconds or after_removed, not both' % where)
        after = step.get('after_removed')
        if after is not None and (not isinstance(after, str) or not after):
            raise ScenarioError('%s.after_removed must be an event id or the label of an earlier step' % where)
        label = step.get('label', 'step%d' % index)
        if not isinstance(label, str) or not label or label in labels:
            raise ScenarioError('%s.label must be a unique non-empty string, got %r' % (where, label))
        labels.add(label)
        params = {key: copy.deepcopy(value) for key, value in step.items() if key not in _TRIGGER_KEYS}
        checked.append({'index': index, 'label': label, 'action': action, 'after_removed': after,
                        'at_seconds': _number(step, 'at_seconds', where),
                        'delay_seconds': _number(step, 'delay_seconds', where), 'params': params})
    return checked


def _first_vm(vms, params, name):
    wanted = params.get('vm')
    if wanted is None:
        return vms[0]
    for vm in vms:
        if vm['name'] == wanted:
            return vm
    raise ScenarioError('scenario %s: vm %r is not in the world (VMs: %s)'
                        % (name, wanted, ', '.join(vm['name'] for vm in vms)))


def _westno(vms, params):
    names = {vm['name']: vm for vm in vms}
    if 'WestNO_0' not in names or 'WestNO_1' not in names or names['WestNO_0']['group'] != names['WestNO_1']['group']:
        raise ScenarioError('scenario westno needs VMs WestNO_0 and WestNO_1 in one group, as in the default '
                            'world; POST /reset without a body after starting without --config, or add them')
    # The documented document: an empty incarnation 1, the Freeze Scheduled
    # (2), Started (3), then gone (4).
    return [
        {'at_seconds': 0, 'action': 'set_clock', 'label': 'set_clock',
         'set': format_iso(epoch_of_utc(2022, 4, 11, 22, 10, 0))},
        {'at_seconds': params.get('event_after_seconds', 5), 'action': 'create_event', 'label': 'freeze',
         'event_id': WESTNO_EVENT_ID, 'event_type': 'Freeze', 'resources': ['WestNO_0', 'WestNO_1'],
         'not_before': '2022-04-11T22:26:58Z', 'event_source': 'Platform', 'duration_seconds': 5,
         'description': 'Virtual machine is being paused because of a memory-preserving Live Migration operation.'},
    ]


def _update_domains(vms, params):
    group = params.get('group', vms[0]['group'])
    members = [vm for vm in vms if vm['group'] == group]
    if not members:
        raise ScenarioError('scenario update_domains: no VM in group %r' % (group,))
    domains = sorted({int(vm['platformUpdateDomain']) for vm in members})
    steps, previous = [], None
    for domain in domains:
        step = {'action': 'create_event', 'label': 'ud%d' % domain,
                'event_type': params.get('event_type', 'Reboot'), 'group': group,
                'resources': [vm['name'] for vm in members if int(vm['platformUpdateDomain']) == domain],
                'description': 'Planned maintenance of the host servers of update domain %d.' % domain}
        for key in ('not_before_seconds', 'linger_seconds', 'impact_seconds', 'duration_seconds'):
            if key in params:
                step[key] = params[key]
        if previous is None:
            step['at_seconds'] = params.get('first_after_seconds', 5)
        else:
            step['after_removed'] = previous
            step['delay_seconds'] = params.get('gap_seconds', 1)
        steps.append(step)
        previous = step['label']
    return steps


def _single_event(event_fields):
    def build(vms, params):
        vm = _first_vm(vms, params, event_fields['event_type'])
        step = dict(event_fields, action='create_event', label='event', resources=[vm['name']],
                    at_seconds=params.get('at_seconds', 5))
        for key in ('not_before_seconds', 'linger_seconds', 'impact_seconds', 'duration_seconds', 'event_id'):
            if key in params:
                step[key] = params[key]
        return [step]
    return build


BUILTIN_SCENARIOS = {
    'westno': _westno,
    'update_domains': _update_domains,
    'user_reboot': _single_event({'event_type': 'Reboot', 'event_source': 'User'}),
    'spot_preemption': _single_event({'event_type': 'Preempt'}),
    'hardware_failure': _single_event({'event_type': 'Reboot', 'hardware_failure': True}),
    'degraded_hardware': _single_event({
        'event_type': 'Redeploy', 'not_before_seconds': 7 * 86400,
        'description': 'The host hardware is degraded; the virtual machine will be moved to healthy hardware. '
                       'Redeploy it yourself as soon as possible to choose the moment.'}),
    'terminate': _single_event({'event_type': 'Terminate', 'event_source': 'User'}),
    'redeploy': _single_event({'event_type': 'Redeploy'}),
}


def build_scenario(request, vms):
    """``(name, checked steps)`` for a POST /scenario body in a world of ``vms``."""
    if not isinstance(request, dict):
        raise ScenarioError('the scenario must be {"name": builtin} or {"steps": [...]}')
    name, steps = request.get('name'), request.get('steps')
    if (name is None) == (steps is None):
        raise ScenarioError('give exactly one of "name" (one of %s) or "steps"' % ', '.join(sorted(BUILTIN_SCENARIOS)))
    params = request.get('params', {})
    if not isinstance(params, dict):
        raise ScenarioError('params must be an object, got %r' % (params,))
    unknown = sorted(set(request) - {'name', 'steps', 'params'})
    if unknown:
        raise ScenarioError('unknown field(s) %s; allowed: name, steps, params' % ', '.join(unknown))
    if name is not None:
        if name not in BUILTIN_SCENARIOS:
            raise ScenarioError('unknown scenario %r; built-in scenarios: %s'
                                % (name, ', '.join(sorted(BUILTIN_SCENARIOS))))
        steps = BUILTIN_SCENARIOS[name](vms, params)
    return name or 'custom', check_steps(steps)


class ScenarioRun:
    """Progress of one running scenario; the world fires its due steps."""

    def __init__(self, name, steps, started_at):
        self.name = name
        self.steps = steps
        self.started_at = started_at
        for step in steps:
            step.update(done=False, fired_at=None, event_id=None, error=None)

    def shift(self, jump):
        """Follow a clock jump so at_seconds keep counting simulated time passed."""
        self.started_at += jump

    def event_id_of(self, reference):
        for step in self.steps:
            if step['label'] == reference:
                return step['event_id']
        return reference

    def due_step(self, now, finished_at_of):
        """The next step to fire now, or None. ``finished_at_of(id)`` -> epoch or None."""
        for step in self.steps:
            if step['done']:
                continue
            if step['after_removed'] is None:
                if now >= self.started_at + step['at_seconds']:
                    return step
                continue
            reference = step['after_removed']
            if any(other['label'] == reference and not other['done'] for other in self.steps):
                continue
            finished = finished_at_of(self.event_id_of(reference))
            if finished is not None and now >= finished + step['delay_seconds']:
                return step
        return None

    @property
    def finished(self):
        return all(step['done'] for step in self.steps)

    def describe(self):
        def when(epoch):
            return None if epoch is None else format_iso(epoch)
        return {
            'name': self.name, 'started_at': when(self.started_at), 'finished': self.finished,
            'steps': [{'index': step['index'], 'label': step['label'], 'action': step['action'],
                       'at_seconds': None if step['after_removed'] else step['at_seconds'],
                       'after_removed': step['after_removed'],
                       'delay_seconds': step['delay_seconds'] if step['after_removed'] else None,
                       'params': step['params'], 'done': step['done'], 'fired_at': when(step['fired_at']),
                       'event_id': step['event_id'], 'error': step['error']} for step in self.steps],
        }
