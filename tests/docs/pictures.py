"""The pictures of the docs site, drawn at build time from the code they show.

- The rolling controller's state machine: a Graphviz graph written from
  ``_rolling_controller.TRANSITIONS``, the table the planner itself follows,
  then turned into SVG by ``dot`` (Debian package graphviz). A picture kept in
  the repository could drift from the code; this one cannot.
- The maintenance report: the real HTML template of the rolling playbook
  (playbooks/templates/rolling_report.html.j2) filled with the report that
  ``_rolling.build_report`` makes of a sample run (two update domains of a web
  group and a database host that Azure restarted without notice), so the
  docs show the timeline exactly as a run draws it.

tests/docs/guides.py puts both into the rolling maintenance guide in place
of its ``<!-- picture: NAME -->`` markers.

Commands (with the collection importable: COLLECTIONS_PATH, see below):
  pictures.py build OUT_DIR    write OUT_DIR/rolling_state_machine.{dot,svg} and OUT_DIR/example_report.html
"""

import argparse
import importlib
import os
import re
import subprocess
import sys

REPOSITORY_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STATE_MACHINE = 'rolling_state_machine'
EXAMPLE_REPORT = 'example_report'
# Stands for the '*' rows of the table: any state that is not settled.
ANY_STATE_NODE = '*'
PACKAGE = 'ansible_collections.azure_maintenance.scheduled_events.plugins.plugin_utils'


def collection_modules(collections_path=None):
    """Import and return (_rolling_controller, _rolling) from a directory holding ansible_collections/."""
    path = collections_path or os.environ.get('COLLECTIONS_PATH')
    if not path:
        raise SystemExit('Set COLLECTIONS_PATH to a directory with ansible_collections/azure_maintenance/scheduled_events '
                         '(tests/tooling/run-docs.sh uses its staged copy).')
    if path not in sys.path:
        sys.path.insert(0, path)
    return importlib.import_module(PACKAGE + '._rolling_controller'), importlib.import_module(PACKAGE + '._rolling')


def _quoted(text):
    return '"%s"' % str(text).replace('\\', '\\\\').replace('"', '\\"')


def state_machine_dot(transitions, states, settled):
    """Return a Graphviz graph of ``transitions`` (rows of (state, condition, next state, action)).

    One edge per row, labelled with its condition and, unless it is "none",
    its action; settled states are drawn with a double border.
    """
    lines = [
        'digraph rolling_controller {',
        '  rankdir=LR;',
        '  node [shape=box, style="rounded", fontname="sans-serif", fontsize=11];',
        '  edge [fontname="sans-serif", fontsize=9];',
        '  %s [label="any state not settled", style="rounded,dashed"];' % _quoted(ANY_STATE_NODE),
    ]
    for state in states:
        style = ', peripheries=2' if state in settled else ''
        lines.append('  %s [label=%s%s];' % (_quoted(state), _quoted(state), style))
    for state, condition, next_state, action in transitions:
        label = condition if action == 'none' else '%s / %s' % (condition, action)
        lines.append('  %s -> %s [label=%s];' % (_quoted(state), _quoted(next_state), _quoted(label)))
    lines.append('}')
    return '\n'.join(lines) + '\n'


def dot_edges(dot_text):
    """Return the (state, condition, next state, action) rows drawn by a graph from state_machine_dot."""
    rows = []
    for match in re.finditer(r'^  "([^"]+)" -> "([^"]+)" \[label="([^"]+)"\];$', dot_text, re.M):
        condition, _sep, action = match.group(3).partition(' / ')
        rows.append((match.group(1), condition, match.group(2), action or 'none'))
    return rows


def sample_state(milestones, start):
    """The planner's state at the end of a sample run that started at epoch ``start``."""
    def record(event_id, event_type, hosts, outcome, state, **offsets):
        times = dict((name, None) for name in milestones)
        times.update((name, start + seconds) for name, seconds in offsets.items())
        return {'event_id': event_id, 'event_type': event_type, 'event_source': 'Platform', 'hosts': hosts,
                'groups': [hosts[0].split('-')[0]], 'resources': [host.replace('-', '_') for host in hosts],
                'state': state, 'outcome': outcome, 'outcome_reason': '', 'status_when_seen': 'Scheduled',
                'times': times, 'foreign_resources': [], 'changes': [], 'warnings': [], 'errors': []}

    events = [
        record('7B9A1C52-0E3D-4F8A-9C61-2D4B5E6F7A01', 'Reboot', ['web-0', 'web-1'], 'approved', 'done',
               seen=5, drain_started=5, drained=35, approved=40, started=55, impact_over=175, verified=185,
               undrained=195),
        record('7B9A1C52-0E3D-4F8A-9C61-2D4B5E6F7A02', 'Reboot', ['web-2', 'web-3'], 'approved', 'done',
               seen=5, drain_started=200, drained=230, approved=235, started=250, impact_over=370, verified=380,
               undrained=390),
        record('7B9A1C52-0E3D-4F8A-9C61-2D4B5E6F7A03', 'Freeze', ['db-0'], 'approved', 'gone',
               seen=20, drain_started=20, drained=45, approved=50, started=60, impact_over=65, verified=70,
               undrained=75, gone=80),
    ]
    return {'events': dict((event['event_id'], event) for event in events), 'hosts': {}}


def example_report_page(controller, rolling, start=1767225600.0):
    """Return the HTML report page of the sample run, drawn as a run draws it (the rolling_report task's own code
    and the playbook's template)."""
    writer = importlib.import_module('ansible_collections.azure_maintenance.scheduled_events.plugins.action.rolling_report')
    report = rolling.build_report(sample_state(controller.MILESTONES, start), {
        'started': start, 'finished': start + 420, 'maintenance_groups': ['web', 'db'],
        'stop_reason': 'nothing pending for 60 s', 'rounds': 84, 'approve': True, 'check_mode': False})
    return writer.report_html(report)


def build(out_dir, collections_path=None):
    """Write the pictures into out_dir; return their paths."""
    controller, rolling = collection_modules(collections_path)
    os.makedirs(out_dir, exist_ok=True)
    dot_path = os.path.join(out_dir, STATE_MACHINE + '.dot')
    svg_path = os.path.join(out_dir, STATE_MACHINE + '.svg')
    with open(dot_path, 'w', encoding='utf-8') as output:
        output.write(state_machine_dot(controller.TRANSITIONS, controller.STATES, controller.SETTLED))
    try:
        subprocess.run(['dot', '-Tsvg', '-o', svg_path, dot_path], check=True, timeout=120)
    except FileNotFoundError:
        raise SystemExit('dot is missing: install the Debian package graphviz (make bootstrap does)') from None
    report_path = os.path.join(out_dir, EXAMPLE_REPORT + '.html')
    with open(report_path, 'w', encoding='utf-8') as output:
        output.write(example_report_page(controller, rolling))
    return [dot_path, svg_path, report_path]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    commands = parser.add_subparsers(dest='command', required=True)
    build_parser = commands.add_parser('build')
    build_parser.add_argument('out_dir')
    options = parser.parse_args()
    for path in build(options.out_dir):
        print('picture: %s' % path)
    return 0


if __name__ == '__main__':
    sys.exit(main())
