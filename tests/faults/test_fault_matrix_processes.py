# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fault matrix, end to end: the real daemon, modules and EDA source against a real simulator process.

The unit-level matrix (tests/unit/plugins/module_utils/test_se_fault_matrix.py)
covers every fault x consumer on a fake clock; these tests prove the items
that need the real processes: a lookup that fails hides no event, a 410
storm on approvals neither freezes polling nor floods IMDS (also when the
service is stopped in the middle of it), an approval interrupted by SIGKILL
is not sent twice, and a hung IMDS holds a module no longer than its
deadline. Every wait is bounded; every port is chosen by the kernel.
"""

import asyncio
import os
import re
import signal
import sys
import time

import pytest

from fault_harness import Service, longest_gap, requests_of, run_module, simulator

FOREVER = 100000


def _approvals(sim, event_id=None):
    return [entry for entry in sim.control.approvals()
            if event_id is None or event_id.lower() in [item.lower() for item in entry['event_ids']]]


def test_identity_down_prepare_runs_approval_waits_then_follows(tmp_path):
    with simulator(tmp_path) as sim:
        sim.control.add_fault('status', vm='vm0', path='compute', status=500, count=FOREVER)
        with Service(tmp_path, sim) as service:
            event_id = sim.control.create_event('Freeze', ['vm0'])
            # Possibly ours: the prepare hook runs although the name is unknown...
            service.wait_for(lambda: service.hook_runs('prepare'))
            assert service.hook_runs('prepare')[0]['affects'] is None
            time.sleep(1.0)
            # ...but nothing is approved blind.
            assert _approvals(sim) == []
            assert 'possibly' in service.log_text()
            sim.control.clear_faults()
            service.wait_for(lambda: [entry for entry in _approvals(sim, event_id) if entry['status'] == 200])
            lookups = requests_of(sim, 'vm0', path='/metadata/instance/compute')
            # Asked again and again, not once at start and then every 30 s.
            assert len(lookups) >= 3


def test_a_410_storm_on_approvals_neither_freezes_polling_nor_floods(tmp_path):
    with simulator(tmp_path) as sim:
        sim.control.add_fault('status', vm='vm0', path='scheduledevents', method='POST', status=410, count=FOREVER)
        with Service(tmp_path, sim, resource_name='vm0',
                     approval={'default_action': 'approve'}) as service:
            sim.control.create_event('Freeze', ['vm0'])
            service.wait_for(lambda: len(requests_of(sim, 'vm0', 'POST')) >= 4)
            window_start = time.time()
            time.sleep(3.0)
            gets = [when for when, dummy, dummy2 in requests_of(sim, 'vm0', 'GET') if when >= window_start - 1]
            posts = [when for when, dummy, dummy2 in requests_of(sim, 'vm0', 'POST') if when >= window_start]
            # Polling goes on at its beat (0.25 s), whatever the approvals meet.
            assert longest_gap(gets) < 2.0, gets
            # Approvals back off (1, 2, 4, 8 s ...): a few in 3 s, never one per poll.
            assert len(posts) <= 3, posts
            before_stop = len(requests_of(sim, 'vm0', 'POST'))
            status, seconds = service.stop()
            assert status == 0 and seconds < 10
            # No storm of POSTs while stopping.
            assert len(requests_of(sim, 'vm0', 'POST')) <= before_stop + 1


def test_sigkill_during_an_approval_does_not_send_it_again(tmp_path):
    with simulator(tmp_path) as sim:
        # The POST is answered only after 3 s: the service is killed while it waits.
        sim.control.add_fault('delay', vm='vm0', path='scheduledevents', method='POST', delay_seconds=3, count=1)
        service = Service(tmp_path, sim, resource_name='vm0', timeout=8,
                          approval={'default_action': 'approve'})
        service.start()
        # Shared host: the approved event stays Scheduled (other tenants), so a second POST would be possible.
        event_id = sim.control.create_event('Freeze', ['vm0'], shared_host=True)
        # Recorded and saved before the POST: seen while the POST waits for its answer.
        service.wait_for(lambda: os.path.exists(service.state_file)
                         and service.state()['events'].get(event_id.lower(), {}).get('approving_at'))
        # Well inside the POST's 3 s wait: it has gone out, its answer has not come back.
        time.sleep(0.5)
        service.stop(signal.SIGKILL)
        # The simulator still takes the POST in when its delay ends, as IMDS would.
        service.wait_for(lambda: _approvals(sim, event_id))
        service.start()
        time.sleep(2.0)
        assert len([entry for entry in sim.control.log(vm='vm0') if entry['method'] == 'POST']) == 1
        assert 'approving' in str(service.state()['events'][event_id.lower()])
        service.stop()


@pytest.mark.parametrize('deadline', [5.0, 10.0])
def test_a_hung_imds_holds_a_module_no_longer_than_its_deadline(tmp_path, deadline):
    with simulator(tmp_path) as sim:
        sim.control.add_fault('delay', vm='vm0', path='scheduledevents', delay_seconds=60, count=FOREVER)
        result, seconds = run_module(tmp_path, 'scheduled_events_info', {
            'endpoint': sim.endpoint('vm0'), 'timeout': 3, 'deadline': deadline, 'resource_name': 'vm0'})
        assert result.get('failed'), result
        # The operation's own account (CPU-independent), then the process's wall time, with room for a loaded machine.
        spent = float(re.search(r' in ([0-9.]+) s \(', result['msg']).group(1))
        assert spent <= deadline + 0.5, result['msg']
        assert seconds < deadline + 30, seconds
        assert 'deadline is %s s' % ('%g' % deadline) in result['msg']
        assert 'all the deadline allowed' in result['msg']


def test_the_eda_source_emits_events_before_the_identity_is_known(tmp_path):
    collections = tmp_path / 'collections'
    namespace = collections / 'ansible_collections' / 'azure_maintenance'
    namespace.mkdir(parents=True)
    os.symlink(os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..')), str(namespace / 'scheduled_events'))
    sys.path.insert(0, str(collections))
    try:
        import importlib.util
        path = str(namespace / 'scheduled_events' / 'extensions' / 'eda' / 'plugins' / 'event_source' /
                   'scheduled_events.py')
        spec = importlib.util.spec_from_file_location('fault_matrix_eda_source', path)
        source_module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(source_module)
    finally:
        sys.path.remove(str(collections))
    with simulator(tmp_path) as sim:
        sim.control.add_fault('status', vm='vm0', path='compute', status=429, count=FOREVER)
        event_id = sim.control.create_event('Freeze', ['vm0'])
        received = []

        class Queue(object):
            async def put(self, item):
                received.append(item['scheduled_event'])

        async def drive():
            arguments = {'endpoint': sim.endpoint('vm0'), 'poll_interval': 0.25, 'only_this_vm': True}
            task = asyncio.ensure_future(source_module.main(Queue(), arguments))
            started = time.monotonic()
            while not received and time.monotonic() - started < 20:
                await asyncio.sleep(0.05)
            sim.control.clear_faults()
            # Start the event only once IMDS has told the source its name, so
            # the "started" change is the first one that can carry it, however
            # slowly the source's retries run on a busy machine.
            while time.monotonic() - started < 40 and 200 not in [
                    status for _epoch, _method, status in requests_of(sim, 'vm0', path='/metadata/instance/compute')]:
                await asyncio.sleep(0.05)
            sim.control.start_event(event_id)
            while len(received) < 2 and time.monotonic() - started < 40:
                await asyncio.sleep(0.05)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

        asyncio.run(drive())
    assert [event['change'] for event in received[:2]] == ['new', 'started']
    assert received[0]['affects_this_vm'] is None and received[0]['resource_name'] is None
    assert received[1]['affects_this_vm'] is True and received[1]['resource_name'] == 'vm0'
