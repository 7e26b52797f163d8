#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Figures of a running process and of the machine, read from /proc, for the benchmarks.

Every reader of a process returns None once the process has gone: a sampler
polls a process that may end between two reads, and must not fail then.
"""

import os

CLOCK_TICKS = float(os.sysconf('SC_CLK_TCK'))


def load_average():
    """The 1, 5 and 15 minute load averages as text: figures taken on a busy machine mean little without them."""
    return ' '.join('%.2f' % value for value in os.getloadavg())


def cpu_seconds(pid):
    """User and system CPU seconds the process itself has used (not its children), or None once it has gone."""
    try:
        with open('/proc/%d/stat' % pid, encoding='ascii') as handle:
            # The command name may hold spaces and parentheses: split after its last ')'.
            fields = handle.read().rsplit(')', 1)[1].split()
    except OSError:
        return None
    # After the command name, state is field 3 of proc(5)'s stat, utime 14 and stime 15.
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def memory_kib(pid, field):
    """A memory figure of /proc/PID/status in KiB (VmRSS: resident now; VmHWM: the peak), or None once the
    process has gone."""
    try:
        with open('/proc/%d/status' % pid, encoding='ascii') as handle:
            for line in handle:
                if line.startswith(field + ':'):
                    return int(line.split()[1])
    except OSError:
        return None
    return None
