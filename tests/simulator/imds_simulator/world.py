"""The simulated world: VMs, their groups, events and each VM's document.

One lock guards it all, so a document, its DocumentIncarnation and the event
states it shows always agree. ``refresh`` moves events along the simulated
clock, fires due scenario steps and counts incarnations; it runs on every
request, every control action and on the simulator's tick.
"""

import collections
import copy
import logging
import threading
import time

from .clock import format_iso, parse_iso
from .config import ConfigError, parse_listen, validate_throttle, validate_vm
from .faults import check_fault
from .events import (EventError, ScheduledEvent, check_event_change, check_event_request, document_entry,
                     realism_warnings, version_shows_type)
from .scenarios import ScenarioError, ScenarioRun, build_scenario

__all__ = ['World', 'ApprovalError', 'DISABLE_AFTER_SECONDS']

_THROTTLE_TOLERANCE_SECONDS = 0.01

DISABLE_AFTER_SECONDS = 24 * 3600
_LOG = logging.getLogger('imds_simulator.world')
# A scenario that keeps firing steps in one refresh (a step loop advancing
# the clock forever) must not hang the simulator.
_MAX_TRANSITIONS_PER_REFRESH = 1000
# Event types whose impact restarts the VM (offline_during_restart).
RESTARTING_TYPES = ('Reboot', 'Redeploy')


def _checked_scenario(request, vm_specs, now):
    """``(name, steps)`` with every create_event step checked against ``vm_specs``."""
    name, steps = build_scenario(request, vm_specs)
    groups = {spec['name']: spec['group'] for spec in vm_specs}
    for step in steps:
        if step['action'] == 'create_event':
            try:
                check_event_request(step['params'], groups, now)
            except EventError as exc:
                raise ScenarioError('steps[%d] (%s): %s' % (step['index'], step['label'], exc)) from None
    return name, steps


class ApprovalError(ValueError):
    """An approval POST IMDS would answer with 400."""


class VmState:
    """One VM's identity plus what IMDS remembers about it."""

    def __init__(self, spec, now):
        self.spec = spec
        self.address = parse_listen(spec['listen'])
        self.incarnation = 1
        self.fingerprint = ()
        self.enabled = True
        self.first_call_pending = True
        self.ready_at_real = None
        self.last_request_at = now
        self.request_count = 0
        self.recent_requests = collections.deque()

    @property
    def name(self):
        return self.spec['name']

    def describe(self):
        return {'name': self.name, 'listen': self.spec['listen'], 'group': self.spec['group'],
                'vmScaleSetName': self.spec['vmScaleSetName'],
                'platformUpdateDomain': self.spec['platformUpdateDomain'],
                'platformFaultDomain': self.spec['platformFaultDomain'],
                'own_events_only': self.spec['own_events_only'], 'incarnation': self.incarnation,
                'enabled': self.enabled, 'request_count': self.request_count,
                'last_request_at': format_iso(self.last_request_at)}


class World:
    """VMs, events and settings; every public method is thread safe."""

    def __init__(self, config, clock, impacts, faults, monotonic=time.monotonic):
        self.lock = threading.RLock()
        self.clock = clock
        self._impacts = impacts
        self.faults = faults
        self._refreshing = False
        self._monotonic = monotonic
        self.config = None
        self.vms = {}
        self.events = {}
        self.scenario = None
        self.apply_config(config)

    # -- configuration ---------------------------------------------------
    def apply_config(self, config):
        """Start over from ``config`` (a checked config): fresh clock, VMs, no events.

        The scenario is checked before anything changes, so a ConfigError
        leaves the world as it was.
        """
        with self.lock:
            scenario = None
            if config['scenario'] is not None:
                try:
                    scenario = _checked_scenario(config['scenario'], config['vms'], self.clock.now())
                except ScenarioError as exc:
                    raise ConfigError('scenario: %s' % exc) from None
            self.config = copy.deepcopy(config)
            if config['clock_start'] is not None:
                self.clock.set(parse_iso(config['clock_start']))
            else:
                self.clock.set(time.time())
            self.clock.set_speed(config['speed'])
            now = self.clock.now()
            self.vms = {spec['name']: VmState(spec, now) for spec in config['vms']}
            self.events = {}
            self._event_sequence = 0
            self.throttle = dict(config['throttle'])
            self.first_call_delay_seconds = config['first_call_delay_seconds']
            self.scenario = None
            if scenario is not None:
                self.scenario = ScenarioRun(scenario[0], scenario[1], now)
            self.refresh()

    def add_vm(self, request):
        with self.lock:
            spec = validate_vm(request, 'vm')
            if spec['name'] in self.vms:
                raise ConfigError('a VM named %r exists already' % spec['name'])
            address = parse_listen(spec['listen'])
            if any(vm.address == address for vm in self.vms.values()):
                raise ConfigError('listen %s is used by another VM' % spec['listen'])
            self.vms[spec['name']] = VmState(spec, self.clock.now())
            # A later reset without a body keeps the VM: the current config
            # is what a reset returns to.
            self.config['vms'].append(spec)
            self.refresh()
            return self.vms[spec['name']].describe()

    def addresses(self):
        with self.lock:
            return {vm.address for vm in self.vms.values()}

    def vm_at(self, address):
        with self.lock:
            for vm in self.vms.values():
                if vm.address == address:
                    return vm.name
            return None

    def set_throttle(self, request):
        with self.lock:
            if not isinstance(request, dict):
                raise ConfigError('throttle must be an object such as {"enabled": true, "per_second": 5}, got %r'
                                  % (request,))
            self.throttle = validate_throttle(dict(self.throttle, **request))
            return dict(self.throttle)

    def set_first_call_delay(self, seconds):
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds <= 600:
            raise ConfigError('first_call_delay_seconds must be a number of real seconds from 0 to 600, got %r'
                              % (seconds,))
        with self.lock:
            self.first_call_delay_seconds = seconds

    # -- the IMDS side ---------------------------------------------------
    def throttled(self, name):
        """True if this request goes over the VM's per-second budget.

        Only admitted requests fill the window: a refused one costs IMDS
        nothing, so a client sending 6 a second still gets 5 answered rather
        than being refused for ever.
        """
        with self.lock:
            vm = self.vms[name]
            if not self.throttle['enabled']:
                return False
            real_now = self._monotonic()
            window = vm.recent_requests
            # A request a few milliseconds inside the second of the one five
            # before it is no excess: a client pacing itself at exactly 5 a
            # second jitters by that much, and IMDS limits "about" 5 a second.
            while window and window[0] <= real_now - 1.0 + _THROTTLE_TOLERANCE_SECONDS:
                window.popleft()
            if len(window) >= self.throttle['per_second']:
                return True
            window.append(real_now)
            return False

    def admit(self, name, scheduled_events=True):
        """Note a request to VM ``name``; return real seconds to hold the answer back.

        The first Scheduled Events request ever, and the first after
        Scheduled Events was disabled, wait ``first_call_delay_seconds``;
        Scheduled Events requests arriving while that wait runs are held
        until the same moment. Requests to other paths (instance metadata)
        neither wait nor keep Scheduled Events enabled: only Scheduled Events
        requests count for the 24-hour idle timer.
        """
        with self.lock:
            vm = self.vms[name]
            vm.request_count += 1
            if not scheduled_events:
                return 0.0
            now = self.clock.now()
            self._disable_if_idle(vm, now)
            vm.last_request_at = now
            if not vm.enabled:
                vm.enabled = True
                vm.first_call_pending = True
                vm.incarnation = 1
                vm.fingerprint = self._fingerprint_for(vm)
                _LOG.info('%s: Scheduled Events enabled again, DocumentIncarnation starts over', name)
            if vm.first_call_pending:
                vm.first_call_pending = False
                vm.ready_at_real = self._monotonic() + self.first_call_delay_seconds
            if vm.ready_at_real is None:
                return 0.0
            return max(0.0, vm.ready_at_real - self._monotonic())

    def identity(self, name):
        with self.lock:
            return copy.deepcopy(self.vms[name].spec)

    def _visible_by_group(self):
        """group -> its visible events in creation order."""
        by_group = {}
        for event in sorted(self.events.values(), key=lambda item: item.sequence):
            if event.visible:
                by_group.setdefault(event.group, []).append(event)
        return by_group

    def _events_seen_by(self, vm, by_group=None):
        seen = (self._visible_by_group() if by_group is None else by_group).get(vm.spec['group'], [])
        if vm.spec['own_events_only']:
            seen = [event for event in seen if vm.name in event.resources]
        return list(seen)

    def _fingerprint_for(self, vm, by_group=None, group_fingerprints=None):
        """What ``vm``'s document shows, to count incarnations.

        Every VM of a group sees the same events unless it sees only its own:
        with ``group_fingerprints`` (a dict kept over one refresh) a group's
        fingerprint is computed once, not once per VM. Per VM, a refresh over
        1,000 VMs and 500 events formatted 500,000 NotBefore dates, and every
        request refreshes.
        """
        by_group = self._visible_by_group() if by_group is None else by_group
        if vm.spec['own_events_only'] or group_fingerprints is None:
            return tuple(event.fingerprint() for event in self._events_seen_by(vm, by_group))
        group = vm.spec['group']
        if group not in group_fingerprints:
            group_fingerprints[group] = tuple(event.fingerprint() for event in by_group.get(group, []))
        return group_fingerprints[group]

    def document(self, name, api_version):
        """The Scheduled Events document VM ``name`` gets at ``api_version``."""
        with self.lock:
            self.refresh()
            vm = self.vms[name]
            events = [document_entry(event, api_version) for event in self._events_seen_by(vm)
                      if version_shows_type(api_version, event.event_type)]
            return {'DocumentIncarnation': vm.incarnation, 'Events': events}

    def offline(self, name):
        """Whether VM ``name`` is restarting now, with ``offline_during_restart`` on.

        A Reboot or Redeploy takes the VM down for its impact: nothing on it
        answers, IMDS included, until the impact ends.
        """
        with self.lock:
            if not self.config['offline_during_restart']:
                return False
            self.refresh()
            return any(event.status == 'Started' and not event.impact_ended and event.event_type in RESTARTING_TYPES
                       and name in event.resources for event in self.events.values())

    def approve(self, name, api_version, event_ids):
        """Approve ``event_ids`` as VM ``name``.

        An id not in its document is refused with ApprovalError (nothing is
        approved) when ``unknown_event_ids`` is ``reject`` (the default);
        with ``accept`` (what Microsoft's mock server does) the unknown ids
        are ignored and the others approved.
        """
        with self.lock:
            self.refresh()
            vm = self.vms[name]
            shown = {event.event_id.lower(): event for event in self._events_seen_by(vm)
                     if version_shows_type(api_version, event.event_type)}
            unknown = [event_id for event_id in event_ids if event_id.lower() not in shown]
            if unknown and self.config.get('unknown_event_ids', 'reject') == 'accept':
                _LOG.info('%s approved unknown EventId(s) %s: ignored (unknown_event_ids: accept)',
                          name, ', '.join(unknown))
                event_ids = [event_id for event_id in event_ids if event_id.lower() in shown]
                unknown = []
            if unknown:
                raise ApprovalError('Bad request. EventId %s is not in the scheduled events of %s; '
                                    'approve only EventIds of the current document'
                                    % (', '.join(unknown), name))
            now = self.clock.now()
            for event_id in event_ids:
                event = shown[event_id.lower()]
                event.approvals.append({'vm': name, 'at': format_iso(now), 'status_then': event.status})
                _LOG.info('%s approved event %s (%s)', name, event.event_id, event.status)
            self.refresh()

    # -- events from the control side --------------------------------------
    def _known_vm_groups(self):
        return {name: vm.spec['group'] for name, vm in self.vms.items()}

    def create_event(self, request):
        with self.lock:
            now = self.clock.now()
            checked = check_event_request(request, self._known_vm_groups(), now)
            checked['warnings'] = realism_warnings(
                checked, {name: vm.spec['platformUpdateDomain'] for name, vm in self.vms.items()}, now)
            for warning in checked['warnings']:
                _LOG.warning('event %s: %s', checked['event_id'], warning)
            if checked['event_id'].lower() in self.events:
                raise EventError('event_id %s exists already; leave event_id out for a fresh GUID'
                                 % checked['event_id'], status=409)
            self._event_sequence += 1
            event = ScheduledEvent(checked, self._event_sequence, now, self.config['default_linger_seconds'])
            self.events[event.event_id.lower()] = event
            if event.hardware_failure:
                # Host hardware failure skips Scheduled: the VM sees it Started.
                self._start(event, now)
            _LOG.info('created %s %s for %s (%s)', event.event_type, event.event_id, event.resources, event.status)
            self.refresh()
            return event.event_id

    def event(self, event_id):
        with self.lock:
            event = self.events.get(str(event_id).lower())
            if event is None:
                raise EventError('no event with id %s; GET /state lists them' % event_id, status=404)
            return event

    def cancel_event(self, event_id):
        with self.lock:
            self.refresh()
            event = self.event(event_id)
            if event.status != 'Scheduled':
                raise EventError('event %s is %s; only a Scheduled event can be cancelled'
                                 % (event.event_id, event.status), status=409)
            event.status = 'Cancelled'
            event.finished_at = self.clock.now()
            self.refresh()
            return event.describe()

    def change_event(self, event_id, request):
        """Change a Scheduled event as Azure may: type, NotBefore, Resources, description, duration."""
        with self.lock:
            self.refresh()
            event = self.event(event_id)
            changes = check_event_change(request, event, self._known_vm_groups(), self.clock.now())
            event.apply_change(changes)
            _LOG.info('changed %s: %s', event.event_id, sorted(changes))
            self.refresh()
            return event.describe()

    def start_event(self, event_id):
        with self.lock:
            self.refresh()
            event = self.event(event_id)
            if event.status != 'Scheduled':
                raise EventError('event %s is %s; only a Scheduled event can be started'
                                 % (event.event_id, event.status), status=409)
            event.force_start = True
            self.refresh()
            return event.describe()

    def mark_tenants_approved(self, event_id):
        with self.lock:
            self.refresh()
            event = self.event(event_id)
            if not event.shared_host:
                raise EventError('event %s is not a shared_host event; other tenants play no part in it'
                                 % event.event_id, status=409)
            if event.status != 'Scheduled':
                raise EventError('event %s is %s already' % (event.event_id, event.status), status=409)
            event.tenants_approved = True
            self.refresh()
            return event.describe()

    def disable_vm(self, name):
        with self.lock:
            vm = self.vms.get(name)
            if vm is None:
                raise ConfigError('no VM named %r; known: %s' % (name, ', '.join(sorted(self.vms))))
            self._disable(vm)
            return vm.describe()

    # -- clock -----------------------------------------------------------
    def advance_clock(self, seconds):
        with self.lock:
            self.clock.advance(seconds)
            self.refresh()

    def set_clock(self, iso_text):
        """Jump the clock; idle timers and the scenario follow, event times do not."""
        with self.lock:
            jump = self.clock.set(parse_iso(iso_text, 'set'))
            for vm in self.vms.values():
                vm.last_request_at += jump
            if self.scenario is not None:
                self.scenario.shift(jump)
            self.refresh()

    def set_speed(self, speed):
        with self.lock:
            self.clock.set_speed(speed)

    # -- scenarios -------------------------------------------------------
    def start_scenario(self, request):
        """Replace any running scenario with ``request``; ScenarioError if it does not fit."""
        with self.lock:
            name, steps = _checked_scenario(request, [vm.spec for vm in self.vms.values()], self.clock.now())
            self.scenario = ScenarioRun(name, steps, self.clock.now())
            self.refresh()
            return self.scenario.describe()

    def _finished_at(self, event_id):
        event = self.events.get(str(event_id).lower()) if event_id else None
        return None if event is None else event.finished_at

    def _fire(self, step, now):
        step['done'] = True
        step['fired_at'] = now
        params = step['params']
        action = step['action']
        try:
            if action == 'create_event':
                step['event_id'] = self.create_event(params)
            elif action == 'change_event':
                changes = dict((key, value) for key, value in params.items() if key != 'event')
                self.change_event(self.scenario.event_id_of(params['event']), changes)
            elif action in ('cancel_event', 'start_event', 'tenants_approved'):
                handler = {'cancel_event': self.cancel_event, 'start_event': self.start_event,
                           'tenants_approved': self.mark_tenants_approved}[action]
                handler(self.scenario.event_id_of(params['event']))
            elif action == 'advance_clock':
                self.clock.advance(params['seconds'])
            elif action == 'set_clock':
                self.set_clock(params['set'])
            elif action == 'set_speed':
                self.set_speed(params['speed'])
            elif action == 'disable_vm':
                self.disable_vm(params['vm'])
            elif action == 'set_throttle':
                self.set_throttle(params['throttle'])
            elif action == 'add_fault':
                self.faults.add(check_fault(params['fault'], self.vms))
        except (ValueError, KeyError) as exc:
            step['error'] = str(exc)
            _LOG.warning('scenario step %s (%s) failed: %s', step['label'], action, exc)

    # -- time passing ----------------------------------------------------
    def _start(self, event, at):
        event.mark_started(at)
        command = event.impact_command or self.config['impact_command']
        if command:
            for name in event.resources:
                self._impacts.run(command, 'start', name, event, at)

    def _end_impact(self, event):
        event.impact_ended = True
        command = event.impact_command or self.config['impact_command']
        if command:
            for name in event.resources:
                self._impacts.run(command, 'end', name, event, event.impact_ends_at)

    def _move_event(self, event, now):
        """Apply one due transition to ``event``; True if one happened."""
        if event.status == 'Scheduled':
            start_at = event.start_due_at(now)
            if start_at is None:
                return False
            self._start(event, start_at)
            return True
        if event.status == 'Started':
            if not event.impact_ended and now >= min(event.impact_ends_at, event.removes_at):
                self._end_impact(event)
                return True
            if now >= event.removes_at:
                event.status = 'Removed'
                event.finished_at = event.removes_at
                return True
        return False

    def _disable(self, vm):
        vm.enabled = False
        vm.ready_at_real = None
        _LOG.info('%s: Scheduled Events disabled', vm.name)

    def _disable_if_idle(self, vm, now):
        if vm.enabled and now - vm.last_request_at >= DISABLE_AFTER_SECONDS:
            self._disable(vm)

    def refresh(self):
        """Bring everything up to the clock's now; safe to call at any time."""
        with self.lock:
            if self._refreshing:
                # Reached from a scenario step fired by the refresh below,
                # which re-checks everything once the step is done.
                return
            self._refreshing = True
            try:
                self._refresh_now()
            finally:
                self._refreshing = False

    def _refresh_now(self):
        for dummy in range(_MAX_TRANSITIONS_PER_REFRESH):
            now = self.clock.now()
            moved = False
            for event in sorted(self.events.values(), key=lambda item: item.sequence):
                while self._move_event(event, now):
                    moved = True
            if self.scenario is not None:
                step = self.scenario.due_step(now, self._finished_at)
                if step is not None:
                    self._fire(step, now)
                    moved = True
            if not moved:
                break
        now = self.clock.now()
        by_group, group_fingerprints = self._visible_by_group(), {}
        for vm in self.vms.values():
            self._disable_if_idle(vm, now)
            if not vm.enabled:
                continue
            fingerprint = self._fingerprint_for(vm, by_group, group_fingerprints)
            if fingerprint != vm.fingerprint:
                vm.fingerprint = fingerprint
                vm.incarnation += 1
        self._impacts.reap()

    def state(self):
        with self.lock:
            self.refresh()
            return {
                'clock': self.clock.describe(),
                'vms': [vm.describe() for vm in self.vms.values()],
                'events': [event.describe() for event in sorted(self.events.values(), key=lambda e: e.sequence)],
                'throttle': dict(self.throttle),
                'first_call_delay_seconds': self.first_call_delay_seconds,
                'default_linger_seconds': self.config['default_linger_seconds'],
                'offline_during_restart': self.config['offline_during_restart'],
                'impact_command': self.config['impact_command'],
                'scenario': None if self.scenario is None else self.scenario.describe(),
            }
