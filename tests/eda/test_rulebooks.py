# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shipped rulebooks and playbooks are well-formed, without starting a rule engine."""

import glob
import json
import os

import pytest
import yaml

from eda_collection import COLLECTION_ROOT

RULEBOOKS = sorted(glob.glob(os.path.join(COLLECTION_ROOT, 'extensions', 'eda', 'rulebooks', '*.yml')))
# The rulebooks of the IMDS source; fleet_eventgrid.yml listens to Event Grid
# instead (tests/eda/test_eventgrid_source.py covers it).
IMDS_RULEBOOKS = [path for path in RULEBOOKS if os.path.basename(path) != 'fleet_eventgrid.yml']
SOURCE = 'azure_maintenance.scheduled_events.scheduled_events'
APPROVE_PLAYBOOK = 'extensions/eda/playbooks/approve_event.yml'


def load(path):
    with open(path, encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def rules_of(path):
    return [rule for ruleset in load(path) for rule in ruleset['rules']]


def test_the_four_rulebooks_are_shipped():
    assert [os.path.basename(path) for path in RULEBOOKS] == ['approve_user_events.yml', 'fleet_eventgrid.yml',
                                                              'log_changes.yml', 'maintenance.yml']


@pytest.mark.parametrize('path', RULEBOOKS, ids=os.path.basename)
def test_rulebook_matches_ansible_rulebooks_schema(path):
    jsonschema = pytest.importorskip('jsonschema')
    ansible_rulebook = pytest.importorskip('ansible_rulebook')
    with open(os.path.join(os.path.dirname(ansible_rulebook.__file__), 'schema', 'ruleset_schema.json'),
              encoding='utf-8') as handle:
        schema = json.load(handle)
    jsonschema.validate(load(path), schema)


@pytest.mark.parametrize('path', IMDS_RULEBOOKS, ids=os.path.basename)
def test_rulebook_watches_this_collections_source_and_logs_every_change(path):
    for ruleset in load(path):
        assert [list(source)[-1] for source in ruleset['sources'] if SOURCE in source] == [SOURCE]
        log_rules = [rule for rule in ruleset['rules'] if rule['condition'] == 'event.scheduled_event is defined']
        assert len(log_rules) == 1 and 'debug' in log_rules[0]['action']
        if len(ruleset['rules']) > 1:
            # Otherwise the first matching rule would swallow the event.
            assert ruleset.get('match_multiple_rules') is True


def test_approving_rules_only_take_new_scheduled_user_events():
    for path in RULEBOOKS:
        for rule in rules_of(path):
            action = rule['action'].get('run_playbook', {})
            if APPROVE_PLAYBOOK in str(action.get('name')):
                condition = ' '.join(rule['condition'].split())
                assert 'event.scheduled_event.event_source == "User"' in condition
                assert 'event.scheduled_event.change == "new"' in condition
                assert 'event.scheduled_event.event_status == "Scheduled"' in condition


def test_playbooks_named_by_rules_exist():
    for path in RULEBOOKS:
        for rule in rules_of(path):
            name = rule['action'].get('run_playbook', {}).get('name')
            if name is None:
                continue
            if name.startswith('azure_maintenance.scheduled_events.'):
                # Found by ansible-rulebook in the collection's playbooks/ directory (another feature ships it).
                assert name == 'azure_maintenance.scheduled_events.rolling_maintenance'
            else:
                assert APPROVE_PLAYBOOK in name
                assert os.path.exists(os.path.join(COLLECTION_ROOT, APPROVE_PLAYBOOK))


def test_approve_playbook_approves_once_per_event_from_its_leader():
    plays = load(os.path.join(COLLECTION_ROOT, APPROVE_PLAYBOOK))
    tasks = [task for play in plays for task in play['tasks']]
    approvals = [task['azure_maintenance.scheduled_events.scheduled_events_approve'] for task in tasks
                 if 'azure_maintenance.scheduled_events.scheduled_events_approve' in task]
    assert len(approvals) == 1
    assert approvals[0]['leader_only'] is True
    assert approvals[0]['event_ids'] == ['{{ scheduled_event.event_id }}']
