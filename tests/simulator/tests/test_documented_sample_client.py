"""A poller in the style of Microsoft's documented advanced Scheduled Events sample.

The client below is written for real IMDS: only its URL points at the
simulator. It polls once per second, acts only when DocumentIncarnation
changes, handles all events of a document together, approves events started
by users and short Freezes (0 <= DurationInSeconds < 9), and only logs the
rest. The simulator's approval log shows it did exactly that.
"""

import logging
import threading

import requests

IMDS_URL = 'http://169.254.169.254/metadata/scheduledevents'
API_VERSION = '2020-07-01'
HEADERS = {'Metadata': 'true'}


class SamplePoller:
    def __init__(self, url=IMDS_URL, poll_seconds=1.0):
        self.url = url
        self.poll_seconds = poll_seconds
        self.session = requests.Session()
        # IMDS must be reached directly, never through a proxy.
        self.session.trust_env = False
        self.last_incarnation = None
        self.logged = []
        self.log = logging.getLogger('sample-poller')

    def get_events(self):
        response = self.session.get(self.url, params={'api-version': API_VERSION}, headers=HEADERS, timeout=5)
        response.raise_for_status()
        return response.json()

    def approve(self, event_ids):
        body = {'StartRequests': [{'EventId': event_id} for event_id in event_ids]}
        response = self.session.post(self.url, params={'api-version': API_VERSION}, headers=HEADERS, json=body,
                                     timeout=5)
        response.raise_for_status()

    @staticmethod
    def should_approve(event):
        if event.get('EventSource') == 'User':
            return True
        return event['EventType'] == 'Freeze' and 0 <= event.get('DurationInSeconds', -1) < 9

    def handle(self, document):
        to_approve = []
        for event in document['Events']:
            if event['EventStatus'] != 'Scheduled':
                continue
            if self.should_approve(event):
                to_approve.append(event['EventId'])
            else:
                self.log.info('not approving %s %s', event['EventType'], event['EventId'])
                self.logged.append(event['EventId'])
        if to_approve:
            self.approve(to_approve)

    def run(self, stop, max_polls):
        for dummy in range(max_polls):
            if stop.is_set():
                return
            document = self.get_events()
            if document['DocumentIncarnation'] != self.last_incarnation:
                self.last_incarnation = document['DocumentIncarnation']
                self.handle(document)
            stop.wait(self.poll_seconds)


def test_sample_client_approves_user_events_and_short_freezes(make_sim):
    from conftest import world_config
    sim = make_sim(world_config(throttle=True))
    create = sim.control.create_event
    user_reboot = create('Reboot', ['vm0'], event_source='User')
    short_freeze = create('Freeze', ['vm0', 'vm1'], duration_seconds=5)
    zero_freeze = create('Freeze', ['vm1'], duration_seconds=0)
    long_freeze = create('Freeze', ['vm0'], duration_seconds=9)
    unknown_freeze = create('Freeze', ['vm0'], duration_seconds=-1)
    platform_redeploy = create('Redeploy', ['vm1'])

    host, port = sim.address('vm0')
    poller = SamplePoller(url='http://%s:%d/metadata/scheduledevents' % (host, port))
    stop = threading.Event()
    thread = threading.Thread(target=poller.run, args=(stop, 6))
    thread.start()
    try:
        sim.control.wait_for(lambda control: control.approvals(), timeout=5)
        # A new document while the poller runs: handled at its next poll.
        later_user_redeploy = create('Redeploy', ['vm1'], event_source='User')
        sim.control.wait_for(lambda control: len(control.approvals()) == 2, timeout=5)
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive()

    approvals = sim.control.approvals()
    assert [(a['vm'], a['status']) for a in approvals] == [('vm0', 200), ('vm0', 200)]
    assert approvals[0]['event_ids'] == [user_reboot, short_freeze, zero_freeze]
    assert approvals[1]['event_ids'] == [later_user_redeploy]
    # Each new document is handled as a whole, so the events left alone are
    # logged again with the second one.
    assert poller.logged == [long_freeze, unknown_freeze, platform_redeploy] * 2
    statuses = {event['id']: event['status'] for event in sim.control.events()}
    for approved in (user_reboot, short_freeze, zero_freeze, later_user_redeploy):
        assert statuses[approved] == 'Started'
    for untouched in (long_freeze, unknown_freeze, platform_redeploy):
        assert statuses[untouched] == 'Scheduled'
    # One GET per second stays far below the throttle.
    assert all(entry['status'] != 429 for entry in sim.control.log())
