"""A small stdlib client for the simulator's control API, for tests and scripts.

    from imds_simulator.control_client import SimulatorControl
    control = SimulatorControl('http://127.0.0.1:18079')
    control.reset()
    event_id = control.create_event('Freeze', ['WestNO_0', 'WestNO_1'])
    control.advance_clock(900)

Every method returns the decoded JSON answer; an error answer raises
ControlError with the status and the simulator's message.
"""

import json
import time
import urllib.error
import urllib.request
from urllib.parse import quote

__all__ = ['SimulatorControl', 'ControlError', 'imds_get']


class ControlError(Exception):
    """The control API answered an error (or could not be reached: status None)."""

    def __init__(self, status, message):
        super().__init__('%s: %s' % (status, message))
        self.status = status
        self.message = message


class SimulatorControl:
    """Calls the control API at ``base_url`` (``http://127.0.0.1:18079``)."""

    def __init__(self, base_url='http://127.0.0.1:18079', timeout=10.0):
        self.base_url = base_url.rstrip('/')
        self.timeout = timeout
        # The simulator is on loopback: never send its traffic to a proxy.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode('utf-8')
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        if data is not None:
            request.add_header('Content-Type', 'application/json')
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                message = json.loads(raw.decode('utf-8')).get('error', raw)
            except ValueError:
                message = raw.decode('utf-8', 'replace')
            raise ControlError(exc.code, message) from None
        except (urllib.error.URLError, OSError) as exc:
            raise ControlError(None, 'cannot reach the simulator at %s: %s' % (self.base_url, exc)) from None
        return json.loads(raw.decode('utf-8')) if raw else None

    # -- whole simulator -------------------------------------------------
    def health(self):
        return self.call('GET', '/health')

    def wait_until_up(self, timeout=10.0):
        """Wait (bounded) until /health answers; ControlError if it never does."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.health()
            except ControlError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.1)

    def state(self):
        return self.call('GET', '/state')

    def reset(self, config=None):
        return self.call('POST', '/reset', config)

    # -- VMs ---------------------------------------------------------------
    def add_vm(self, **vm):
        return self.call('POST', '/vms', vm)

    def disable_vm(self, name):
        return self.call('POST', '/vms/%s/disable' % quote(name, safe=''))

    def vm(self, name):
        for vm in self.state()['vms']:
            if vm['name'] == name:
                return vm
        raise ControlError(404, 'no VM named %s' % name)

    # -- events ------------------------------------------------------------
    def create_event(self, event_type, resources, **fields):
        """Create an event; returns its EventId. ``fields`` are the other POST /events keys."""
        body = dict(fields, event_type=event_type, resources=list(resources))
        return self.call('POST', '/events', body)['event_id']

    def event(self, event_id):
        return self.call('GET', '/events/%s' % quote(event_id, safe=''))

    def events(self):
        return self.call('GET', '/events')['events']

    def cancel_event(self, event_id):
        return self.call('DELETE', '/events/%s' % quote(event_id, safe=''))

    def change_event(self, event_id, **changes):
        """Change a Scheduled event: event_type, resources, not_before_seconds or not_before, description,
        duration_seconds."""
        return self.call('POST', '/events/%s/change' % quote(event_id, safe=''), changes)

    def start_event(self, event_id):
        return self.call('POST', '/events/%s/start' % quote(event_id, safe=''))

    def tenants_approved(self, event_id):
        return self.call('POST', '/events/%s/tenants-approved' % quote(event_id, safe=''))

    # -- clock -------------------------------------------------------------
    def clock(self):
        return self.call('GET', '/clock')

    def advance_clock(self, seconds):
        return self.call('POST', '/clock', {'advance_seconds': seconds})

    def set_clock(self, iso_text):
        return self.call('POST', '/clock', {'set': iso_text})

    def set_speed(self, speed):
        return self.call('POST', '/clock', {'speed': speed})

    # -- behaviour switches ------------------------------------------------
    def add_fault(self, kind, vm=None, path=None, method=None, count=1, **details):
        body = dict(details, kind=kind, vm=vm, path=path, method=method, count=count)
        return self.call('POST', '/faults', body)['faults'][0]

    def faults(self):
        return self.call('GET', '/faults')['faults']

    def clear_faults(self):
        return self.call('DELETE', '/faults')

    def set_throttle(self, enabled=None, per_second=None):
        body = {key: value for key, value in (('enabled', enabled), ('per_second', per_second)) if value is not None}
        return self.call('POST', '/throttle', body)

    def set_first_call_delay(self, seconds):
        return self.call('POST', '/enablement', {'first_call_delay_seconds': seconds})

    # -- scenarios ---------------------------------------------------------
    def start_scenario(self, name=None, steps=None, params=None):
        body = {'name': name} if name is not None else {'steps': steps}
        if params:
            body['params'] = params
        return self.call('POST', '/scenario', body)

    def scenario(self):
        return self.call('GET', '/scenario')['scenario']

    # -- records -----------------------------------------------------------
    def log(self, since=0, vm=None):
        query = '?since=%d' % since + ('&vm=%s' % quote(vm, safe='') if vm else '')
        return self.call('GET', '/log' + query)['entries']

    def approvals(self, since=0):
        return self.call('GET', '/approvals?since=%d' % since)['approvals']

    def impacts(self, since=0):
        return self.call('GET', '/impacts?since=%d' % since)['impacts']

    def wait_for(self, predicate, timeout=10.0, interval=0.05):
        """Poll ``predicate(self)`` until truthy (returned) or ``timeout`` real seconds pass."""
        deadline = time.monotonic() + timeout
        while True:
            result = predicate(self)
            if result:
                return result
            if time.monotonic() >= deadline:
                raise TimeoutError('condition not met within %.1fs' % timeout)
            time.sleep(interval)


def imds_get(base_url, path='/metadata/scheduledevents', api_version='2020-07-01', headers=None, timeout=10.0):
    """``(status, decoded JSON or raw text)`` of one IMDS GET, with ``Metadata: true`` by default."""
    request = urllib.request.Request('%s%s?api-version=%s' % (base_url.rstrip('/'), path, api_version))
    for name, value in (headers if headers is not None else {'Metadata': 'true'}).items():
        request.add_header(name, value)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    text = raw.decode('utf-8', 'replace')
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text
