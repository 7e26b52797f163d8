# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""cpu_breakdown.py: each process of a run given to its stage and kind of work, from dump-acct's lines."""

import cpu_breakdown


def line(command, pid, ppid, cpu_seconds, forked=False):
    """A dump-acct line (times in hundredths of a second), as acct 6.6 prints it."""
    ticks = '%.2f' % (cpu_seconds * 100)
    return '|'.join([command.ljust(16), 'v3', ticks, '0.00', '100.00', '0', '0', '1000.00', '10.00', str(pid),
                     str(ppid), 'F    ' if forked else '     ', '0', '__', 'Thu Nov 26 22:49:36 2026'])


# In the order processes end: a child before its parent. Process ids wrap:
# 201 is the rolling stage's shell, then, once that stage has ended, a
# pytest process of the sanity stage, then the units stage's shell.
RUN = [
    # rolling stage (shell 201): the script, ansible-playbook, a worker, the module it ran through /bin/sh.
    line('python', 210, 205, 0.25),
    line('sh', 205, 204, 0.01),
    line('ansible-playboo', 204, 203, 0.03, forked=True),
    line('ansible-playboo', 206, 203, 0.02, forked=True),
    line('ansible-playboo', 203, 202, 5.0),
    line('bash', 202, 201, 0.1),
    line('bash', 201, 100, 0.0, forked=True),
    # A simulator that detached: given to init.
    line('python', 300, 1, 7.0, forked=True),
    # sanity stage (shell 220): ansible-test, and a command substitution's python that is no module run.
    line('python', 231, 230, 1.5),
    line('bash', 230, 222, 0.0, forked=True),
    line('python', 201, 222, 30.0),
    # units stage (shell 201 again).
    line('python', 240, 201, 2.0),
    line('bash', 201, 100, 0.0, forked=True),
    line('bash', 222, 220, 0.2),
    line('bash', 220, 100, 0.0, forked=True),
    line('bash', 100, 99, 0.3),
    'not a line of dump-acct',
]
STAGES = [(201, 'rolling'), (220, 'sanity'), (201, 'units')]


def test_every_process_goes_to_its_stage_and_kind():
    result = cpu_breakdown.breakdown(cpu_breakdown.parse_dump(RUN), STAGES)

    assert dict(result['rolling']) == {'module run': 0.25, 'sh': 0.01, 'ansible worker': 0.05,
                                       'ansible-playbook': 5.0, 'bash': 0.1}
    # The reused id 201 is sanity's pytest, not the rolling stage's shell.
    assert dict(result['sanity']) == {'python': 31.5, 'bash': 0.2}
    assert dict(result['units']) == {'python': 2.0, 'bash': 0.0}
    assert dict(result[None]) == {'python': 7.0, 'bash': 0.3}


def test_a_parent_is_the_first_process_with_its_id_to_end_after_the_child():
    processes = cpu_breakdown.parse_dump(RUN)
    parent_of = cpu_breakdown.parents(processes)
    by_pid = dict((process.pid, index) for index, process in enumerate(processes) if process.pid != 201)

    assert parent_of[0] == by_pid[205]
    assert processes[parent_of[by_pid[202]]].command == 'bash' and processes[parent_of[by_pid[202]]].forked
    assert parent_of[by_pid[300]] is None


def test_the_report_lists_stages_by_cpu_then_the_totals():
    text = cpu_breakdown.report(cpu_breakdown.breakdown(cpu_breakdown.parse_dump(RUN), STAGES))

    lines = text.splitlines()
    assert lines[0].split()[:3] == ['31.7', 'CPU-s', 'sanity']
    assert 'left its stage' in lines[1] and lines[2].split()[:3] == ['5.4', 'CPU-s', 'rolling']
    assert lines[-1].split() == ['46.4', 'CPU-s', 'in', 'all']
    assert '    0.2 CPU-s  module run' in text
