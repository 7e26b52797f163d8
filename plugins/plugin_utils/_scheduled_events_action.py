# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The action plugins of the modules: one task, any target OS. Internal use only.

On a POSIX target the action runs the Python module, exactly as without an
action plugin. On a PowerShell target (Windows over WinRM, PSRP or SSH) it
runs the module's own code on the controller instead, with a core client
whose transport sends each HTTP request from the target through
``ansible.windows.win_uri`` (see ``_remote_http``). The module's code is
imported, not copied: its argument spec, option checks, selection, approval
and wait logic and result keys are the module's, so an option added to the
module is accepted here without any change.

On a local connection (the target is the controller's own machine) the
module's code runs in the controller's worker process with the core's own
HTTP transport: the requests leave from the same machine and network as the
module's would, without starting a Python interpreter and loading the module
for every host and task, which is most of what a read costs.

The variable ``scheduled_events_remote_http`` picks the path by hand:
``auto`` (the default), ``module`` (always the Python module, even on a
local connection), ``ansible.windows.win_uri`` or ``ansible.builtin.uri``.
The last sends the requests from a POSIX target with the same code path,
which is how the Windows path is tested without a Windows host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleAction, AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.azure_maintenance.scheduled_events.plugins.module_utils._se_options import client_from_options
from ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils._remote_http import (
    HTTP_MODULES,
    URI,
    WIN_URI,
    RemoteHttpTransport,
)

PATH_VARIABLE = 'scheduled_events_remote_http'
AUTO = 'auto'
# The paths a request can take besides the HTTP modules.
PYTHON_MODULE = 'module'
IN_CONTROLLER = 'controller'
PATH_CHOICES = (AUTO, PYTHON_MODULE) + HTTP_MODULES
# Connection plugins whose target is the controller's own machine.
LOCAL_CONNECTIONS = ('local', 'ansible.builtin.local')

_INSTALL_HINT = {
    WIN_URI: ('install the ansible.windows collection on the controller: ansible-galaxy collection install '
              'ansible.windows (it also comes with the ansible package: pip install ansible)'),
    URI: 'ansible.builtin.uri ships with ansible-core; check the installation of ansible-core',
}


WINDOWS_SHELL_FAMILIES = ('powershell', 'cmd')


def choose_path(shell_family, setting, local=False, asynchronous=False):
    """How the IMDS requests of a task travel: PYTHON_MODULE, IN_CONTROLLER or an HTTP module's name.

    ``shell_family`` is the connection's shell family (``sh``, ``powershell``,
    ...); ``setting`` the value of the ``scheduled_events_remote_http``
    variable (None when unset); ``local`` whether the connection's target is
    the controller's own machine; ``asynchronous`` whether the task runs with
    ``async`` (which only the Python module supports).
    """
    if setting is None or setting == '' or setting == AUTO:
        # The cmd shell (Windows over SSH with cmd.exe as its default shell)
        # runs PowerShell modules too; neither runs the Python module.
        if shell_family in WINDOWS_SHELL_FAMILIES:
            return WIN_URI
        return IN_CONTROLLER if local and not asynchronous else PYTHON_MODULE
    if setting == PYTHON_MODULE or setting in HTTP_MODULES:
        return setting
    raise AnsibleActionFail('%s must be one of %s, got %r' % (PATH_VARIABLE, ', '.join(PATH_CHOICES), setting))


def is_local_connection(connection):
    """Whether ``connection`` runs its commands on the controller's own machine."""
    names = (getattr(connection, '_load_name', None), getattr(connection, 'transport', None))
    return any(isinstance(name, str) and name in LOCAL_CONNECTIONS for name in names)


def validated_params(argument_spec, args, module_name):
    """The task's arguments checked and completed against the module's own argument spec, as AnsibleModule would."""
    outcome = ArgumentSpecValidator(argument_spec).validate(dict(args))
    if outcome.error_messages:
        raise AnsibleActionFail('%s: %s' % (module_name, '; '.join(outcome.error_messages)))
    return outcome.validated_parameters


class ModuleExit(Exception):
    """Raised by ControllerModule.exit_json and fail_json, carrying the result, as AnsibleModule ends the process."""

    def __init__(self, result):
        super(ModuleExit, self).__init__(result.get('msg', 'module exit'))
        self.result = result


class ControllerModule(object):
    """The part of AnsibleModule a module's ``run_module`` uses, for running it on the controller."""

    def __init__(self, params, check_mode):
        self.params = params
        self.check_mode = check_mode
        self.warnings = []

    def warn(self, warning):
        self.warnings.append(warning)

    def exit_json(self, **result):
        raise ModuleExit(result)

    def fail_json(self, msg, **result):
        result['failed'] = True
        result['msg'] = msg
        raise ModuleExit(result)


def run_on_controller(run, params, check_mode, name):
    """Run ``run(module)`` (a module's ``run_module`` with its other arguments bound) with a ControllerModule.

    Returns the result the module exited with, its warnings included, as the
    task would have registered it from the module.
    """
    module = ControllerModule(params, check_mode)
    try:
        run(module)
    except ModuleExit as exc:
        result = exc.result
        if module.warnings:
            result['warnings'] = list(result.get('warnings') or []) + module.warnings
        return result
    raise AnsibleActionFail('%s ended without a result' % name)


def run_module_code(module_code, params, check_mode, transport):
    """Run a module's ``run_module`` with ``transport`` under its client; return its result."""
    def make_client(options):
        return client_from_options(options, transport=transport)

    return run_on_controller(lambda module: module_code.run_module(module, make_client=make_client), params,
                             check_mode, module_code.__name__)


def target_host_name(task_vars):
    """The target's short host name: from gathered facts, else its inventory name."""
    facts = task_vars.get('ansible_facts') or {}
    name = facts.get('hostname') or task_vars.get('ansible_hostname') or task_vars.get('inventory_hostname') or ''
    return str(name).partition('.')[0]


class ScheduledEventsAction(ActionBase):
    """Base of the modules' action plugins; subclasses set ``MODULE`` (FQCN) and ``module_code`` (the module)."""

    MODULE = None
    module_code = None

    _supports_check_mode = True
    _supports_async = True

    # Set while a read-only request runs, so that in check mode the HTTP
    # module still reads (the Python module reads in check mode too).
    _read_only_request = False

    def run(self, tmp=None, task_vars=None):
        result = super(ScheduledEventsAction, self).run(tmp, task_vars)
        del tmp  # tmp no longer has any effect
        task_vars = task_vars or {}
        try:
            elsewhere = self._run_without_the_target(task_vars)
            if elsewhere is not None:
                result.update(elsewhere)
                return result
            setting = self._templar.template(task_vars.get(PATH_VARIABLE))
            path = choose_path(getattr(self._connection._shell, 'SHELL_FAMILY', None), setting,
                               local=is_local_connection(self._connection), asynchronous=bool(self._task.async_val))
            if path == IN_CONTROLLER:
                result.update(self._run_in_controller())
                return result
            if path == PYTHON_MODULE:
                wrap_async = self._task.async_val and not self._connection.has_native_async
                result.update(self._execute_module(module_name=self.MODULE, module_args=self._task.args,
                                                   task_vars=task_vars, wrap_async=wrap_async))
                if not wrap_async:
                    self._remove_tmp_path(self._connection._shell.tmpdir)
                return result
            try:
                result.update(self._run_remote_http(path, task_vars))
            finally:
                self._remove_tmp_path(self._connection._shell.tmpdir)
        except AnsibleAction as exc:
            result.update(exc.result)
        return result

    def _run_without_the_target(self, task_vars):
        """A result for a task that sends nothing to the target (``via: arm``), or None to read or approve there."""
        del task_vars
        return None

    def _run_in_controller(self):
        """The module's code in this process, with the core's own transport (local connections only)."""
        params = validated_params(self.module_code.module_argument_spec(), self._task.args, self.MODULE)
        return run_module_code(self.module_code, params, bool(self._task.check_mode), None)

    def _run_remote_http(self, http_module, task_vars):
        if self._task.async_val:
            raise AnsibleActionFail('%s cannot run with async when IMDS is read through %s; run it without async'
                                    % (self.MODULE, http_module))
        self._require_module(http_module)
        params = validated_params(self.module_code.module_argument_spec(), self._task.args, self.MODULE)

        def run_http_module(module_name, module_args, read_only):
            return self._run_http_module(module_name, module_args, read_only, task_vars)

        transport = RemoteHttpTransport(run_http_module, http_module,
                                        sender_host_name=lambda: target_host_name(task_vars))
        result = run_module_code(self.module_code, params, bool(self._task.check_mode), transport)
        if result.get('failed') and transport.target_failure is not None:
            # The host, not IMDS, was out of reach: report it the way Ansible does.
            result['unreachable'] = True
        return result

    def _require_module(self, http_module):
        found = self._shared_loader_obj.module_loader.find_plugin_with_context(
            http_module, collection_list=self._task.collections)
        if not found.resolved:
            raise AnsibleActionFail('%s reads IMDS on this target through %s, which is not installed: %s.'
                                    % (self.MODULE, http_module, _INSTALL_HINT[http_module]))

    def _run_http_module(self, module_name, module_args, read_only, task_vars):
        if self._task.check_mode and not read_only:
            # The core never approves in check mode; this guards that promise here too.
            raise AnsibleActionFail('%s refused to send a %s request in check mode' % (self.MODULE, module_args['method']))
        self._read_only_request = read_only
        try:
            return self._execute_module(module_name=module_name, module_args=module_args, task_vars=task_vars)
        finally:
            self._read_only_request = False

    def _update_module_args(self, module_name, module_args, task_vars, *args, **kwargs):
        super(ScheduledEventsAction, self)._update_module_args(module_name, module_args, task_vars, *args, **kwargs)
        if self._read_only_request:
            module_args['_ansible_check_mode'] = False
