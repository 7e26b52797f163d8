# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # How the modules run on Windows targets, said once for both of them.
    # The code is plugins/plugin_utils/_scheduled_events_action.py and
    # _remote_http.py; docs/windows.md has the details and what was tested.

    DOCUMENTATION = r'''
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the
      controller.
    support: full
    details:
      - On POSIX targets the action runs the Python module on the target, as any module; on a local connection
        (the target is the controller's own machine) it runs the module's code in the controller's worker process
        instead, with the same HTTP client, which spares starting a Python module for every host.
      - On Windows targets (a connection whose shell is PowerShell or cmd, such as WinRM, PSRP or SSH to Windows) the
        module's own code runs on the controller and only the HTTP requests to IMDS run on the target, through
        C(ansible.windows.win_uri).
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: [posix, windows]
notes:
  - B(Windows targets) are supported with the same options, results and safety rules. Each IMDS request runs on the
    target through C(ansible.windows.win_uri) (no proxy, no redirects, header C(Metadata) set to C(true)); retries, time-outs,
    parsing, the VM identity, the approval rules and waits run on the controller with the same code as the Python
    module. This needs the C(ansible.windows) collection on the controller (C(ansible-galaxy collection install
    ansible.windows), or the C(ansible) package, which includes it); the task fails with that advice without it.
  - On Windows every request is one module run over the connection, which takes longer than a request from Python on
    the VM; O(timeout) bounds the request on the target in whole seconds, and C(async) is not supported.
  - The variable C(scheduled_events_remote_http) chooses the path by hand, V(auto) (the default), V(module) (always the
    Python module, even on a local connection), V(ansible.windows.win_uri) or V(ansible.builtin.uri).
    V(ansible.builtin.uri) sends the requests from a POSIX target through the same code as the Windows path; it is a
    testing aid, as no Windows host was available to test with.
'''
