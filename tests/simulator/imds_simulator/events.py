"""One scheduled event: its request checks, its record, and how IMDS shows it.

The record keeps everything the control API reports; ``document_entry``
renders the PascalCase object a VM sees, gated by api-version the way IMDS
introduced each field.
"""

import re
import uuid

from .clock import format_iso, format_rfc1123, parse_iso
from .config import ConfigError, validate_impact_command

__all__ = ['EVENT_TYPES', 'EventError', 'ScheduledEvent', 'check_event_request', 'MINIMUM_NOTICE_SECONDS',
           'realism_warnings', 'version_shows_type', 'document_entry']

EVENT_TYPES = ('Freeze', 'Reboot', 'Redeploy', 'Preempt', 'Terminate')
EVENT_SOURCES = ('Platform', 'User')

# Shortest notice IMDS gives per type; used when a request names no NotBefore.
MINIMUM_NOTICE_SECONDS = {'Freeze': 900, 'Reboot': 900, 'Redeploy': 600, 'Preempt': 30, 'Terminate': 300}

# First api-version whose documents carry the type / the field.
_TYPE_SINCE = {'Preempt': '2017-11-01', 'Terminate': '2019-01-01'}
_DESCRIPTION_SINCE = '2019-04-01'
_EVENT_SOURCE_SINCE = '2019-08-01'
_DURATION_SINCE = '2020-07-01'
# Before this version IMDS prefixed IaaS resource names with an underscore.
_NO_UNDERSCORE_SINCE = '2017-08-01'

_DEFAULT_IMPACT_SECONDS = 7
_GUID = re.compile(r'^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\Z')

_REQUEST_KEYS = ('event_type', 'resources', 'group', 'event_source', 'description', 'not_before_seconds',
                 'not_before', 'duration_seconds', 'impact_seconds', 'linger_seconds', 'hardware_failure',
                 'shared_host', 'event_id', 'impact_command')


class EventError(ValueError):
    """A bad event request or an action the event's status does not allow."""

    def __init__(self, message, status=400):
        super().__init__(message)
        self.status = status


def default_description(event_type, event_source, hardware_failure):
    if hardware_failure:
        return 'Virtual machine is being restarted because the host server had a hardware failure.'
    if event_type == 'Freeze':
        return 'Virtual machine is being paused because of a memory-preserving Live Migration operation.'
    if event_type == 'Preempt':
        return 'Spot virtual machine is being evicted because Azure needs the capacity back.'
    if event_type == 'Terminate':
        return 'Virtual machine is going to be deleted from its scale set.'
    verb = 'restarted' if event_type == 'Reboot' else 'moved to another host'
    if event_source == 'User':
        return 'Virtual machine is going to be %s as requested by an authorized user.' % verb
    return 'Virtual machine is going to be %s because of planned maintenance of the host server.' % verb


def _number(request, key, minimum, default):
    value = request.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
        raise EventError('%s must be a number >= %s, got %r' % (key, minimum, value))
    return value


def check_event_request(request, known_vms, now):
    """A normalized event request, or EventError naming the bad field.

    ``known_vms`` maps VM name to its group; ``now`` is simulated epoch seconds.
    """
    if not isinstance(request, dict):
        raise EventError('the event must be a JSON object with at least "event_type" and "resources"')
    unknown = sorted(set(request) - set(_REQUEST_KEYS))
    if unknown:
        raise EventError('unknown field(s) %s; allowed: %s' % (', '.join(unknown), ', '.join(_REQUEST_KEYS)))
    hardware_failure = request.get('hardware_failure', False)
    if not isinstance(hardware_failure, bool):
        raise EventError('hardware_failure must be true or false, got %r' % (hardware_failure,))
    event_type = request.get('event_type', 'Reboot' if hardware_failure else None)
    matches = [known for known in EVENT_TYPES if isinstance(event_type, str) and known.lower() == event_type.lower()]
    if not matches:
        raise EventError('event_type must be one of %s, got %r' % (', '.join(EVENT_TYPES), event_type))
    event_type = matches[0]
    if hardware_failure and event_type != 'Reboot':
        raise EventError('hardware_failure events are Reboots that appear already Started; '
                         'drop event_type or set it to Reboot')
    resources = request.get('resources')
    if not isinstance(resources, list) or not resources or not all(isinstance(name, str) for name in resources):
        raise EventError('resources must be a non-empty list of VM names, got %r' % (resources,))
    if len(set(resources)) != len(resources):
        raise EventError('resources lists a VM twice: %r' % (resources,))
    missing = [name for name in resources if name not in known_vms]
    if missing:
        raise EventError('resources names unknown VM(s) %s; known VMs: %s'
                         % (', '.join(missing), ', '.join(sorted(known_vms)) or 'none'))
    group = request.get('group', known_vms[resources[0]])
    if not isinstance(group, str) or not group:
        raise EventError('group must be a non-empty string, got %r' % (group,))
    outsiders = [name for name in resources if known_vms[name] != group]
    if outsiders:
        raise EventError('resources %s are not in group %r; an event only affects VMs of one group'
                         % (', '.join(outsiders), group))
    source = request.get('event_source', 'Platform')
    if source not in EVENT_SOURCES:
        raise EventError('event_source must be Platform or User, got %r' % (source,))
    description = request.get('description')
    if description is None:
        description = default_description(event_type, source, hardware_failure)
    if not isinstance(description, str):
        raise EventError('description must be a string, got %r' % (description,))
    not_before = _check_not_before(request, event_type, hardware_failure, now)
    duration = request.get('duration_seconds', 5 if event_type == 'Freeze' else -1)
    if isinstance(duration, bool) or not isinstance(duration, int) or duration < -1:
        raise EventError('duration_seconds must be a whole number >= 0, or -1 when unknown, got %r' % (duration,))
    impact_seconds = _number(request, 'impact_seconds', 0, duration if duration > 0 else _DEFAULT_IMPACT_SECONDS)
    linger_seconds = _number(request, 'linger_seconds', 0, None)
    shared_host = request.get('shared_host', False)
    if not isinstance(shared_host, bool):
        raise EventError('shared_host must be true or false, got %r' % (shared_host,))
    event_id = request.get('event_id')
    if event_id is None:
        event_id = str(uuid.uuid4()).upper()
    # Azure's EventIds are GUIDs, and the collection refuses to approve an id
    # that is not one: a rehearsal with any other id would fail where Azure
    # would not.
    if not isinstance(event_id, str) or not _GUID.match(event_id):
        raise EventError('event_id must be a GUID, as Azure\'s EventIds are (such as %s); leave it out to get a '
                         'new one, got %r' % (str(uuid.uuid4()).upper(), event_id))
    try:
        impact_command = validate_impact_command(request.get('impact_command'))
    except ConfigError as exc:
        raise EventError(str(exc)) from None
    return {
        'event_id': event_id, 'event_type': event_type, 'resources': list(resources), 'group': group,
        'event_source': source, 'description': description, 'not_before': not_before,
        'duration_seconds': duration, 'impact_seconds': impact_seconds, 'linger_seconds': linger_seconds,
        'hardware_failure': hardware_failure, 'shared_host': shared_host, 'impact_command': impact_command,
    }


def _check_not_before(request, event_type, hardware_failure, now):
    relative = request.get('not_before_seconds')
    absolute = request.get('not_before')
    if relative is not None and absolute is not None:
        raise EventError('give not_before_seconds (relative) or not_before (absolute), not both')
    if hardware_failure:
        if relative is not None or absolute is not None:
            raise EventError('a hardware_failure event is Started at once and has no NotBefore; '
                             'drop not_before/not_before_seconds')
        return None
    if absolute is not None:
        try:
            return parse_iso(absolute, 'not_before')
        except ValueError as exc:
            raise EventError(str(exc)) from None
    if relative is None:
        return now + MINIMUM_NOTICE_SECONDS[event_type]
    if isinstance(relative, bool) or not isinstance(relative, (int, float)) or relative < 0:
        raise EventError('not_before_seconds must be a number >= 0, got %r' % (relative,))
    return now + relative


def realism_warnings(checked, update_domains, now):
    """What makes a checked event request unlike what Azure sends, for a warning (never refused: tests may want it).

    ``update_domains`` maps VM name to its platformUpdateDomain.
    """
    warnings = []
    domains = sorted(set(update_domains.get(name) for name in checked['resources']))
    if len(domains) > 1:
        warnings.append('Resources span update domains %s; Azure puts machines of at most one update domain in one '
                        'event' % ', '.join(str(domain) for domain in domains))
    if checked['not_before'] is not None:
        notice = checked['not_before'] - now
        minimum = MINIMUM_NOTICE_SECONDS[checked['event_type']]
        if notice < minimum:
            warnings.append('notice of %.0f s is shorter than the documented minimum of %d s for %s events'
                            % (notice, minimum, checked['event_type']))
    return warnings


# What Azure may change in an event that is still Scheduled.
_CHANGE_KEYS = ('event_type', 'resources', 'not_before_seconds', 'not_before', 'description', 'duration_seconds')


def check_event_change(request, event, known_vms, now):
    """The checked changes to the Scheduled ``event``, or EventError naming the bad field.

    Azure can change an event before it starts: another type (a Reboot that
    turns out a Freeze), another NotBefore, other Resources (always VMs of the
    event's group). Fields left out keep their value.
    """
    if not isinstance(request, dict) or not request:
        raise EventError('the change must be a JSON object with some of %s' % ', '.join(_CHANGE_KEYS))
    unknown = sorted(set(request) - set(_CHANGE_KEYS))
    if unknown:
        raise EventError('unknown field(s) %s; an event change may set: %s' % (', '.join(unknown), ', '.join(_CHANGE_KEYS)))
    if event.status != 'Scheduled':
        raise EventError('event %s is %s; only a Scheduled event can change' % (event.event_id, event.status),
                         status=409)
    # Reuse the checks of a new event on the event as it would become.
    merged = {'event_type': request.get('event_type', event.event_type),
              'resources': request.get('resources', event.resources), 'group': event.group,
              'event_source': event.event_source, 'description': request.get('description', event.description),
              'duration_seconds': request.get('duration_seconds', event.duration_seconds)}
    if 'not_before_seconds' in request or 'not_before' in request:
        for key in ('not_before_seconds', 'not_before'):
            if key in request:
                merged[key] = request[key]
    else:
        merged['not_before_seconds'] = max(0, event.not_before - now) if event.not_before is not None else 0
    checked = check_event_request(merged, known_vms, now)
    return dict((key, checked[key]) for key in ('event_type', 'resources', 'not_before', 'description',
                                                'duration_seconds'))


class ScheduledEvent:
    """The simulator's record of one event, including what IMDS never shows."""

    def __init__(self, request, sequence, now, default_linger_seconds):
        self.sequence = sequence
        self.event_id = request['event_id']
        self.event_type = request['event_type']
        self.resources = request['resources']
        self.group = request['group']
        self.event_source = request['event_source']
        self.description = request['description']
        self.not_before = request['not_before']
        self.duration_seconds = request['duration_seconds']
        self.impact_seconds = request['impact_seconds']
        linger = request['linger_seconds']
        self.linger_seconds = default_linger_seconds if linger is None else linger
        self.hardware_failure = request['hardware_failure']
        self.shared_host = request['shared_host']
        self.impact_command = request['impact_command']
        self.warnings = list(request.get('warnings', []))
        self.status = 'Scheduled'
        self.created_at = now
        self.started_at = None
        self.removes_at = None
        self.finished_at = None
        self.impact_ends_at = None
        self.impact_ended = False
        self.approvals = []
        self.tenants_approved = False
        self.force_start = False
        self.changes = []

    def apply_change(self, changes):
        """Apply what check_event_change returned."""
        for key, value in changes.items():
            setattr(self, key, value)
        self.changes.append(dict(changes))

    @property
    def visible(self):
        return self.status in ('Scheduled', 'Started')

    def mark_started(self, at):
        self.status = 'Started'
        self.started_at = at
        self.removes_at = at + self.linger_seconds
        self.impact_ends_at = at + self.impact_seconds

    def start_due_at(self, now):
        """Simulated time this Scheduled event starts at, or None if not yet."""
        if self.force_start:
            return now
        candidates = []
        if self.approvals and (not self.shared_host or self.tenants_approved):
            candidates.append(now)
        if self.not_before is not None and now >= self.not_before:
            # Backdate so a clock jump far past NotBefore also carries the event
            # through its linger time.
            candidates.append(self.not_before)
        return min(candidates) if candidates else None

    def fingerprint(self):
        """What a VM's document shows of this event, for incarnation counting."""
        return (self.event_id, self.status, self.event_type, tuple(self.resources), self.not_before_text(),
                self.description, self.event_source, self.duration_seconds)

    def not_before_text(self):
        if self.status != 'Scheduled' or self.not_before is None:
            return ''
        return format_rfc1123(self.not_before)

    def describe(self):
        """All internal fields, for the control API."""
        def when(epoch):
            return None if epoch is None else format_iso(epoch)
        return {
            'id': self.event_id, 'group': self.group, 'type': self.event_type, 'status': self.status,
            'resources': list(self.resources), 'source': self.event_source, 'description': self.description,
            'not_before': when(self.not_before), 'not_before_rfc1123': self.not_before_text(),
            'duration_seconds': self.duration_seconds, 'impact_seconds': self.impact_seconds,
            'linger_seconds': self.linger_seconds, 'created_at': when(self.created_at),
            'started_at': when(self.started_at), 'removes_at': when(self.removes_at),
            'finished_at': when(self.finished_at), 'impact_ends_at': when(self.impact_ends_at),
            'approvals': list(self.approvals), 'hardware_failure': self.hardware_failure,
            'shared_host': self.shared_host, 'tenants_approved': self.tenants_approved,
            'impact_command': self.impact_command, 'warnings': list(self.warnings),
            'changes': [dict(change, not_before=when(change['not_before'])) if 'not_before' in change else dict(change)
                        for change in self.changes],
        }


def version_shows_type(api_version, event_type):
    since = _TYPE_SINCE.get(event_type)
    return since is None or api_version >= since


def document_entry(event, api_version):
    """The PascalCase object IMDS returns for ``event`` at ``api_version``."""
    prefix = '_' if api_version < _NO_UNDERSCORE_SINCE else ''
    entry = {
        'EventId': event.event_id,
        'EventStatus': event.status,
        'EventType': event.event_type,
        'ResourceType': 'VirtualMachine',
        'Resources': [prefix + name for name in event.resources],
        'NotBefore': event.not_before_text(),
    }
    if api_version >= _DESCRIPTION_SINCE:
        entry['Description'] = event.description
    if api_version >= _EVENT_SOURCE_SINCE:
        entry['EventSource'] = event.event_source
    if api_version >= _DURATION_SINCE:
        entry['DurationInSeconds'] = event.duration_seconds
    return entry
