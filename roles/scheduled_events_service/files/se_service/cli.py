# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Command line: run the service, ``--check`` the configuration, or poll ``--once``.

Exit statuses: 0 success, 1 IMDS could not be polled (``--once``), 2 the
configuration, the hooks, the metrics address or the state directory are
unusable.
"""

import argparse
import copy
import json
import sys

from . import VERSION

EXIT_OK = 0
EXIT_POLL_FAILED = 1
EXIT_CONFIG = 2


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        prog='scheduled-events-service',
        description='Polls Azure Scheduled Events, runs prepare/started/recover hooks and approves events by policy.')
    parser.add_argument('--config', default=None, help='configuration file (default: %(default)s)')
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument('--check', action='store_true',
                      help='validate the configuration and the hook directories, then exit (non-zero on problems)')
    mode.add_argument('--once', action='store_true',
                      help='poll once and print, as JSON, what the service would do; runs no hook, approves nothing')
    parser.add_argument('--staged', action='store_true',
                        help='with --check: the configuration is a copy on its way to its place (as in a '
                             'configuration tool\'s validate step), so its folder is not checked, only the file')
    parser.add_argument('--version', action='version', version='%(prog)s ' + VERSION)
    arguments = parser.parse_args(argv)
    if arguments.staged and not arguments.check:
        parser.error('--staged goes with --check only')
    return arguments


def _fail(message):
    sys.stderr.write('ERROR: %s\n' % message)
    return EXIT_CONFIG


def run_check(config_path, staged=False):
    """Validate everything a start would need; print a summary (``staged``: see load_config)."""
    from .config import PHASES, ConfigError, load_config, validate_loopback_listen
    from .core._se_document import API_VERSIONS
    from .hooks import check_hooks
    from .metrics import MetricsListenError, check_listen_address
    from .security import InsecureFileError
    try:
        config = load_config(config_path, staged=staged)
        found = check_hooks(config['hooks_dir'], PHASES)
        if config['metrics']['listen']:
            check_listen_address(*validate_loopback_listen(config['metrics']['listen']))
    except (ConfigError, InsecureFileError, MetricsListenError) as exc:
        return _fail(str(exc))
    rules = config['approval']['rules']
    sys.stdout.write('configuration OK: %s\n' % config_path)
    sys.stdout.write('endpoint %s (api-version %s), poll every %s s\n'
                     % (config['endpoint'], config['api_version'], config['poll_interval']))
    if config['api_version'] not in API_VERSIONS:
        # Not an error: Azure may have published it since this release. But
        # IMDS answers 400 to a version it does not have, at every poll.
        sys.stdout.write('note: api-version %s is not one this release knows (%s); IMDS refuses a version it does '
                         'not have, at every poll: keep it only if Azure has published it\n'
                         % (config['api_version'], ', '.join(API_VERSIONS)))
    for phase in PHASES:
        sys.stdout.write('%s hooks: %s\n' % (phase, ', '.join(found[phase]) or 'none'))
    sys.stdout.write('approval rules: %s; otherwise %s%s\n'
                     % ('; '.join('%s -> %s' % (rule['name'], rule['action']) for rule in rules) or 'none',
                        config['approval']['default_action'],
                        ' (leader only)' if config['approval']['leader_only'] else ''))
    return EXIT_OK


def run_once(config_path):
    """Poll once and print the plan: events, hooks due, approval decisions."""
    from .core._se_errors import ScheduledEventsError
    from .config import ConfigError, load_config
    from .engine import Service
    from .hooks import list_hooks
    from .logs import configure_logging
    from .reconcile import approvals_due, reconcile
    try:
        config = load_config(config_path)
    except ConfigError as exc:
        return _fail(str(exc))
    logger = configure_logging('text', 'warning')
    service = Service(config, config_path, logger, dry_run=True)
    service.client = service._build_client()
    try:
        service._resolve_identity()
        normalized, raw = service.client.get_document()
    except ScheduledEventsError as exc:
        sys.stderr.write('ERROR: %s\n' % exc.message)
        return EXIT_POLL_FAILED
    finally:
        service.client.close()
    state = copy.deepcopy(service.state)
    notes = reconcile(state, normalized, service.resource_name, config['hooks_for_other_vms'])
    dummy, decisions = approvals_due(state, config['approval'], service.resource_name, assume_prepare_succeeds=True)
    plan = []
    for key in state['event_order']:
        record = state['events'][key]
        decision = decisions.get(key)
        plan.append({
            'event': service.poller.identity.annotate(record['event']),
            'present': record['present'],
            'hooks_due': [{'phase': phase, 'hooks': list_hooks(config['hooks_dir'], phase)} for phase in record['due']],
            'approval': ({'decision': decision[0], 'rule': decision[1], 'reason': decision[2]} if decision
                         else {'decision': 'done' if record['approved_at'] else 'none',
                               'approved_at': record['approved_at']}),
        })
    output = {'resource_name': service.resource_name, 'identity_source': service.identity_source,
              'endpoint': service.client.events_url, 'document_incarnation': normalized['document_incarnation'],
              'changes': [{'kind': kind, 'event_id': event.get('event_id') if event else None} for kind, event, dummy_detail in notes],
              'events': plan, 'document': raw, 'warnings': normalized['warnings']}
    sys.stdout.write(json.dumps(output, indent=2, sort_keys=True) + '\n')
    return EXIT_OK


def run_service(config_path):
    # First, before anything is loaded: a reload or stop asked for while the
    # service starts is kept and acted on once it runs, not the end of it.
    from .signals import SignalRelay
    signal_relay = SignalRelay()
    signal_relay.install()
    from .config import PHASES, ConfigError, load_config
    from .engine import Service
    from .hooks import check_hooks
    from .logs import configure_logging
    from .metrics import MetricsListenError
    from .security import InsecureFileError
    from .state import StateError, save_state
    try:
        config = load_config(config_path)
    except ConfigError as exc:
        configure_logging('auto', 'info').error('not starting: %s', exc)
        return EXIT_CONFIG
    logger = configure_logging(config['log']['format'], config['log']['level'])
    try:
        check_hooks(config['hooks_dir'], PHASES)
    except InsecureFileError as exc:
        # Polling goes on (approvals by rule, recover of other hooks); the
        # offending hook is refused when its phase comes, which blocks
        # approvals that wait on prepare.
        logger.error('%s; that hook will be refused when its phase comes', exc)
    service = Service(config, config_path, logger)
    try:
        # Proven at once: a service that cannot remember which hooks ran
        # would run them again after its next restart.
        save_state(config['state_file'], service.state)
    except StateError as exc:
        logger.error('not starting: %s. Without its state the service would run hooks again after a restart.', exc)
        return EXIT_CONFIG
    service.install_signal_handlers(signal_relay)
    try:
        return service.run()
    except KeyboardInterrupt:
        return service.shutdown()
    except MetricsListenError as exc:
        logger.error('not starting: %s', exc)
        if service.runner is not None:
            service.shutdown()  # started after all: let a hook finish and save the state
        elif service.client is not None:
            service.client.close()
        return EXIT_CONFIG


def main(argv=None):
    arguments = parse_arguments(sys.argv[1:] if argv is None else argv)
    from .config import DEFAULT_CONFIG_PATH
    config_path = arguments.config or DEFAULT_CONFIG_PATH
    if arguments.check:
        return run_check(config_path, staged=arguments.staged)
    if arguments.once:
        return run_once(config_path)
    return run_service(config_path)
