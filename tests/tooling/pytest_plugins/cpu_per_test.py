# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""pytest plugin: the CPU each test used, the dearest listed at the end of the run.

make test is bound by CPU on a 2-core machine, so what a stage costs is its
CPU, not its wall time (which --durations shows, and which is mostly waiting
on a simulated clock). Each test's figure is the user and system time, from
its setup to its teardown, of the process running it and of the processes it
started and waited for (an ansible-playbook run with its workers and modules,
a simulator it stopped). A process a test leaves running (a daemon) counts
towards the test that reaps it, if any. With pytest-xdist, each worker
measures its own tests and the figures reach the controller with the test
reports, which prints them.

The test scripts load it for every pytest stage (run_pytest in
tests/tooling/common.sh); ``--cpu-per-test=N`` lists N tests (0: none).
"""

import resource

import pytest

PROPERTY = 'cpu_seconds'
DEFAULT_LISTED = 15


def cpu_seconds_used():
    """User and system seconds of this process and of the child processes it has waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def pytest_addoption(parser):
    parser.addoption('--cpu-per-test', type=int, default=DEFAULT_LISTED, metavar='N',
                     help='list the N tests that used the most CPU at the end (0: none; default %d)' % DEFAULT_LISTED)


def pytest_configure(config):
    if config.getoption('cpu_per_test') < 0:
        raise pytest.UsageError('--cpu-per-test takes the number of tests to list, 0 or more')
    config.pluginmanager.register(CpuPerTest(config.getoption('cpu_per_test')), 'cpu_per_test_report')


class CpuPerTest:
    """Measures each test where it runs; gathers and prints the figures where the reports arrive."""

    def __init__(self, listed):
        self.listed = listed
        self.started = {}
        self.used = {}

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item):
        self.started[item.nodeid] = cpu_seconds_used()
        try:
            return (yield)
        finally:
            self.started.pop(item.nodeid, None)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item):
        try:
            return (yield)
        finally:
            # After the fixtures' teardown (failed or not), before the
            # teardown report is made: the report carries the figure, to the
            # xdist controller too.
            started = self.started.get(item.nodeid)
            if started is not None:
                item.user_properties.append((PROPERTY, cpu_seconds_used() - started))

    def pytest_runtest_logreport(self, report):
        if report.when != 'teardown':
            return
        for name, value in report.user_properties:
            if name == PROPERTY:
                self.used[report.nodeid] = value

    def pytest_terminal_summary(self, terminalreporter):
        if not self.listed or not self.used:
            return
        total = sum(self.used.values())
        dearest = sorted(self.used.items(), key=lambda entry: (-entry[1], entry[0]))[:self.listed]
        terminalreporter.write_sep('=', 'CPU per test: the %d dearest of %d, %.1f CPU-s in all' % (
            len(dearest), len(self.used), total))
        terminalreporter.write_line('(user + system seconds of the test and of the processes it waited for)')
        for nodeid, seconds in dearest:
            terminalreporter.write_line('%8.2f  %s' % (seconds, nodeid))
