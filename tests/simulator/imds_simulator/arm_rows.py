"""The world's events as Azure Resource Graph shows them, and the queries the facade answers.

Pure functions: ``rows_of`` turns the world's event records into rows of the
``maintenanceresources`` table; ``parse_query`` reads the few Kusto query
shapes the collection sends and refuses anything else with a message that
says what is accepted, so a client bug is never hidden by a lenient parser.

One event becomes one row per ARM resource that owns a VM in its
Resources: the VM itself, or its scale set for scale-set instances. The row
``name`` is the EventId, as in Azure, so the IMDS and ARM views share ids.
"""

import re

from .events import document_entry

__all__ = ['ROW_TYPE', 'QueryError', 'parse_query', 'filter_rows', 'rows_of', 'owner_id', 'arm_status',
           'ROW_COLUMNS']

ROW_TYPE = 'microsoft.maintenance/scheduledevents'
# The api-version IMDS documents use; the rows carry the same fields.
_PROPERTIES_API_VERSION = '2020-07-01'
# The world's internal statuses and the ones Azure shows outside the VM.
_ARM_STATUS = {'Removed': 'Completed', 'Cancelled': 'Canceled'}
ROW_COLUMNS = ('id', 'name', 'type', 'tenantId', 'kind', 'location', 'resourceGroup', 'subscriptionId',
               'managedBy', 'sku', 'plan', 'properties', 'tags', 'identity', 'zones', 'extendedLocation')


class QueryError(ValueError):
    """A query the facade does not answer; the message says which shapes it accepts."""


def arm_status(event):
    """The EventStatus Resource Graph shows for a world event record."""
    return _ARM_STATUS.get(event.status, event.status)


def owner_id(spec):
    """ARM id of the resource that owns the events of VM ``spec``: the VM, or its scale set."""
    prefix = '/subscriptions/%s/resourcegroups/%s/providers/Microsoft.Compute' % (
        spec['subscriptionId'], spec['resourceGroupName'])
    if spec['vmScaleSetName']:
        return '%s/virtualMachineScaleSets/%s' % (prefix, spec['vmScaleSetName'])
    return '%s/virtualMachines/%s' % (prefix, spec['name'])


def _owners(event, vm_specs):
    """``[(owner id, spec of its first VM in Resources)]`` in Resources order, each owner once."""
    owners = []
    seen = set()
    for name in event.resources:
        spec = vm_specs.get(name)
        if spec is None:
            continue
        owner = owner_id(spec)
        if owner.lower() not in seen:
            seen.add(owner.lower())
            owners.append((owner, spec))
    return owners


def is_listed(event, now, retention_seconds):
    """True while Resource Graph shows the event: live, or finished less than ``retention_seconds`` ago."""
    if event.status in ('Scheduled', 'Started'):
        return True
    return event.finished_at is not None and now - event.finished_at < retention_seconds


def rows_of(events, vm_specs, now, retention_seconds, tenant_id):
    """The ``maintenanceresources`` rows for ``events`` (world records), sorted by id.

    ``vm_specs`` maps VM name to its checked config entry.
    """
    rows = []
    for event in events:
        if not is_listed(event, now, retention_seconds):
            continue
        properties = document_entry(event, _PROPERTIES_API_VERSION)
        properties['EventStatus'] = arm_status(event)
        for owner, spec in _owners(event, vm_specs):
            rows.append({
                'id': '%s/providers/Microsoft.Maintenance/scheduledevents/%s' % (owner, event.event_id),
                'name': event.event_id, 'type': ROW_TYPE, 'tenantId': tenant_id, 'kind': '',
                'location': spec['location'], 'resourceGroup': spec['resourceGroupName'].lower(),
                'subscriptionId': spec['subscriptionId'], 'managedBy': '', 'sku': None, 'plan': None,
                'properties': dict(properties), 'tags': None, 'identity': None, 'zones': None,
                'extendedLocation': None,
            })
    rows.sort(key=lambda row: row['id'].lower())
    return rows


# -- the query shapes ------------------------------------------------------
_STRING = r"""(?:'[^'\\]*'|"[^"\\]*")"""
_STRING_LIST = r'\(\s*(%s(?:\s*,\s*%s)*)\s*\)' % (_STRING, _STRING)
_TYPE_FILTER = re.compile(r'''^where\s+type\s*(?:=~|==)\s*(['"])microsoft\.maintenance/scheduledevents\1$''',
                          re.IGNORECASE)
# column name in the query -> how the filter reads a row
_LIST_FILTERS = (
    (re.compile(r'^where\s+subscriptionId\s+in~\s*%s$' % _STRING_LIST), 'subscriptionId'),
    (re.compile(r'^where\s+resourceGroup\s+in~\s*%s$' % _STRING_LIST), 'resourceGroup'),
    # The 9th segment of the row id is the ARM name of the VM or scale set.
    (re.compile(r'''^where\s+tostring\(\s*split\(\s*id\s*,\s*(['"])/\1\s*\)\s*\[\s*8\s*\]\s*\)\s+in~\s*%s$'''
                % _STRING_LIST), 'resource_name'),
    (re.compile(r'^where\s+tostring\(\s*properties\.EventId\s*\)\s+in~\s*%s$' % _STRING_LIST), 'event_id'),
)
_PROJECT = re.compile(r'^project\s+(\w+(?:\s*,\s*\w+)*)$')
_ORDER = re.compile(r'^order\s+by\s+id\s+asc$')
_ACCEPTED = ('maintenanceresources | where type =~ "microsoft.maintenance/scheduledevents" '
             '[| where subscriptionId in~ (...)] [| where resourceGroup in~ (...)] '
             '[| where tostring(split(id, "/")[8]) in~ (...)] [| where tostring(properties.EventId) in~ (...)] '
             '[| project COLUMNS] [| order by id asc]')


def _strings(text):
    return [item[1:-1] for item in re.findall(_STRING, text)]


def parse_query(query):
    """``{'filters': {field: [values]}, 'columns': [...] or None}`` for an accepted query; QueryError if not."""
    if not isinstance(query, str) or not query.strip():
        raise QueryError('query must be a non-empty Kusto query string; accepted shapes: ' + _ACCEPTED)
    stages = [' '.join(stage.split()) for stage in query.split('|')]
    if stages[0] != 'maintenanceresources':
        raise QueryError('the simulator only has the table maintenanceresources, the query starts with %r; '
                         'accepted shapes: %s' % (stages[0][:60], _ACCEPTED))
    if len(stages) < 2 or not _TYPE_FILTER.match(stages[1]):
        raise QueryError('the second stage must be: where type =~ "microsoft.maintenance/scheduledevents"; '
                         'accepted shapes: ' + _ACCEPTED)
    filters, columns = {}, None
    for stage in stages[2:]:
        for pattern, field in _LIST_FILTERS:
            match = pattern.match(stage)
            if match:
                if field in filters:
                    raise QueryError('the query filters %s twice; give one in~ list' % field)
                filters[field] = [value.lower() for value in _strings(match.group(match.lastindex))]
                break
        else:
            project = _PROJECT.match(stage)
            if project:
                columns = [name.strip() for name in project.group(1).split(',')]
                unknown = [name for name in columns if name not in ROW_COLUMNS]
                if unknown:
                    raise QueryError('project names unknown column(s) %s; columns: %s'
                                     % (', '.join(unknown), ', '.join(ROW_COLUMNS)))
            elif not _ORDER.match(stage):
                raise QueryError('the simulator does not answer the stage %r; accepted shapes: %s'
                                 % (stage[:80], _ACCEPTED))
    return {'filters': filters, 'columns': columns}


def _row_value(row, field):
    if field == 'resource_name':
        return row['id'].split('/')[8]
    if field == 'event_id':
        return row['properties']['EventId']
    return row[field]


def filter_rows(rows, parsed, subscriptions):
    """The rows a parsed query selects within ``subscriptions`` (empty: every subscription)."""
    wanted_subscriptions = {subscription.lower() for subscription in subscriptions}
    selected = []
    for row in rows:
        if wanted_subscriptions and row['subscriptionId'].lower() not in wanted_subscriptions:
            continue
        if all(str(_row_value(row, field)).lower() in values for field, values in parsed['filters'].items()):
            selected.append(row if parsed['columns'] is None else {name: row[name] for name in parsed['columns']})
    return selected
