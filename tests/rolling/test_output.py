# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""System test: what a person sees of a rolling maintenance run with the collection's quiet output.

The run is a plain ansible-playbook with ANSIBLE_STDOUT_CALLBACK set to the
collection's callback and none of the display settings the other tests use.
Two events: one whose drain waits with until/retries, one whose drain fails (Azure then starts it at NotBefore,
which the test brings forward once the run has shown the failure: how long the run takes to get there is this
machine's, so it must not decide whether the run sees the event at all).

Run: .venv/bin/python -m pytest tests/rolling/test_output.py -v
"""

import os
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rolling_harness import FILES, RollingWorld, inventory_name  # noqa: E402 pylint: disable=wrong-import-position

pytestmark = pytest.mark.skipif(sys.platform != 'linux', reason='needs the simulator and ansible-playbook locally')

RETRIED = 'E5000000-0000-4000-8000-000000000001'
REFUSED = 'E5000000-0000-4000-8000-000000000002'
RETRIED_AGAIN = 'E5000000-0000-4000-8000-000000000003'
QUIET = 'azure_maintenance.scheduled_events.quiet'
REFUSED_DRAIN_FAILED = 'Freeze %s: draining -> awaiting_start (drain failed)' % REFUSED
# Per task and host lines of the default output.
PER_HOST_PREFIXES = ('ok: [', 'skipping: [', 'changed: [', 'included: ', 'FAILED - RETRYING')


def run(world, verbosity, watch=None):
    settings = {'web': {'max_unavailable': 1, 'drain_tasks': os.path.join(FILES, 'drain_after_retries.yml'),
                        'verify_tasks': os.path.join(FILES, 'record_verify.yml'),
                        'undrain_tasks': os.path.join(FILES, 'record_undrain.yml')},
                'db': {'max_unavailable': 1, 'drain_tasks': os.path.join(FILES, 'drain_failing.yml'),
                       'undrain_tasks': os.path.join(FILES, 'record_undrain.yml')}}
    env = {'ANSIBLE_STDOUT_CALLBACK': QUIET, 'ANSIBLE_DISPLAY_OK_HOSTS': None, 'ANSIBLE_DISPLAY_SKIPPED_HOSTS': None}
    arguments = dict(extra_args=['-v'] if verbosity else [], timeout=900, env=env, rolling_group_settings=settings)
    if watch is None:
        return world.run_playbook(**arguments)
    return world.run_playbook_watched(watch, **arguments)


def test_the_quiet_output_has_a_line_per_event_and_step_and_shows_failures(tmp_path):
    groups = {'web': {'vms': [('web_0', 0), ('web_1', 1)], 'max_unavailable': 1},
              'db': {'vms': [('db_0', 0)], 'max_unavailable': 1}}
    with RollingWorld(tmp_path, groups, speed=1) as world:
        world.start_scenario([
            {'action': 'create_event', 'at_seconds': 0, 'event_id': RETRIED, 'event_type': 'Freeze',
             'resources': ['web_0'], 'linger_seconds': 3, 'impact_seconds': 1},
            # Not approved once its drain fails: Azure starts it at NotBefore (Azure's 15 minutes' notice).
            {'action': 'create_event', 'at_seconds': 0, 'event_id': REFUSED, 'event_type': 'Freeze',
             'resources': ['db_0'], 'linger_seconds': 3, 'impact_seconds': 1},
        ])
        world.control.wait_for(lambda control: len(control.events()) == 2, timeout=30)

        def bring_the_refused_event_forward():
            """Once the run has shown the refused drain and approved the other event (which NotBefore would
            otherwise start), move the clock past NotBefore: the refused event starts, unapproved."""
            if REFUSED_DRAIN_FAILED not in world.output_so_far() \
                    or RETRIED.lower() not in world.approvals_per_event():
                return False
            world.control.advance_clock(world.seconds_past_every_not_before())
            return True

        quiet = run(world, verbosity=0, watch=bring_the_refused_event_forward)
        lines = quiet.output.splitlines()

        # The refused drain fails the run, and says so in full.
        assert quiet.returncode != 0, quiet.output[-3000:]
        assert any(line.startswith('fatal: [%s]' % inventory_name('db_0')) for line in lines), quiet.output
        assert 'system test drain refused by the load balancer' in quiet.output
        # One line per event and step, not a line per task and host.
        assert [line for line in lines if line.startswith(PER_HOST_PREFIXES)] == [], quiet.output
        assert 'Freeze %s: pending -> draining (fits)' % RETRIED in lines
        assert 'Freeze %s: draining -> approving (drained approvable)' % RETRIED in lines
        assert sum(1 for line in lines if line == 'Freeze %s: pending -> draining (fits)' % RETRIED) == 1
        assert REFUSED_DRAIN_FAILED in lines, quiet.output
        # The recap names the hosts with a problem (db_0's rescued drain; the host that ran the run's final
        # check, which failed), not the others.
        recap = lines[[index for index, line in enumerate(lines) if line.startswith('PLAY RECAP')][-1]:]
        named = [line.split(' ')[0] for line in recap if line.startswith('host-')]
        assert inventory_name('db_0') in named and inventory_name('web_1') not in named, recap
        assert any(re.match(r'[0-9]+ host\(s\) : ok=[0-9]+ ', line) for line in recap), recap
        # The drain that took three looks did run its retries.
        assert [step for _at, step in world.steps()[inventory_name('web_0')]][0] == 'drain'

        # -v shows what the default output shows, retries included.
        world.control.create_event(event_id=RETRIED_AGAIN, event_type='Freeze', resources=['web_1'],
                                   linger_seconds=3, impact_seconds=1)
        verbose = run(world, verbosity=1)
        assert any(line.startswith('ok: [') for line in verbose.output.splitlines())
        assert 'FAILED - RETRYING: [%s]: Wait until the drain has taken effect' % inventory_name('web_1') \
            in verbose.output, verbose.output[-3000:]
