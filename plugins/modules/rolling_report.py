#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: rolling_report
short_description: Write the report of a rolling maintenance run on the controller, as JSON and as an HTML page
version_added: 0.2.0
description:
  - Used by C(azure_maintenance.scheduled_events.rolling_maintenance) as a run ends; it runs on the controller only
    (an action plugin) and sends nothing to any host.
  - Writes O(report) to O(dir)/O(name)C(.json) and the page drawn from it to O(dir)/O(name)C(.html), creating O(dir)
    where it is missing. Each file is written beside its final name and then renamed, so a reader never sees half a
    report.
  - It starts no module. The C(ansible.builtin.file), C(ansible.builtin.copy) and C(ansible.builtin.template) tasks it
    replaces started five, about a second and a half of CPU at the end of every run.
author:
  - azure_maintenance.scheduled_events contributors (!UNKNOWN)
extends_documentation_fragment:
  - azure_maintenance.scheduled_events.controller_task
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: In check mode it writes nothing and returns the paths it would write.
options:
  report:
    description:
      - The report, as the P(azure_maintenance.scheduled_events.rolling_report#filter) filter makes it (C(run),
        C(events), C(phases), C(ticks)).
    type: dict
    required: true
  dir:
    description:
      - The folder on the controller to write the two files to; created (mode C(0755)) where it is missing.
    type: path
    required: true
  name:
    description:
      - The name of the two files, without C(.json) or C(.html).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Write the report
  azure_maintenance.scheduled_events.rolling_report:
    report: "{{ report }}"
    dir: "{{ playbook_dir }}/reports"
    name: "rolling-maintenance-{{ now(utc=true, fmt='%Y%m%dT%H%M%SZ') }}"
  run_once: true
'''

RETURN = r'''
json:
  description: The path of the JSON report.
  returned: success
  type: str
  sample: /srv/reports/rolling-maintenance-20261126T201500Z.json
html:
  description: The path of the HTML page.
  returned: success
  type: str
  sample: /srv/reports/rolling-maintenance-20261126T201500Z.html
'''

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._controller_only import (
    refuse_outside_the_controller,
)


def module_argument_spec():
    return dict(
        report={'type': 'dict', 'required': True},
        dir={'type': 'path', 'required': True},
        name={'type': 'str', 'required': True},
    )


def main():
    refuse_outside_the_controller('rolling_report', module_argument_spec())


if __name__ == '__main__':
    main()
