"""Reading record files while other processes append to them (imds_simulator.json_lines)."""

import json

import pytest

from imds_simulator.json_lines import read_complete_lines


def test_a_line_still_being_written_is_left_for_the_next_read(tmp_path):
    path = tmp_path / 'records.jsonl'
    first, second = {'hook': 'prepare/10-first', 'n': 1}, {'hook': 'recover/10-first', 'n': 2}
    whole = json.dumps(second) + '\n'
    # What a reader saw under load: the second record cut inside a string.
    path.write_text(json.dumps(first) + '\n' + whole[:len(whole) // 2], encoding='utf-8')
    assert read_complete_lines(str(path)) == [first]
    path.write_text(json.dumps(first) + '\n' + whole, encoding='utf-8')
    assert read_complete_lines(str(path)) == [first, second]


def test_blank_lines_are_skipped_and_a_file_not_yet_written_has_no_records(tmp_path):
    path = tmp_path / 'records.jsonl'
    assert read_complete_lines(str(path)) == []
    path.write_text('\n{"a": 1}\n\n', encoding='utf-8')
    assert read_complete_lines(str(path)) == [{'a': 1}]


def test_a_complete_line_that_is_not_json_is_an_error_naming_the_file_and_line(tmp_path):
    path = tmp_path / 'records.jsonl'
    path.write_text('{"a": 1}\nhook says hello\n', encoding='utf-8')
    with pytest.raises(ValueError, match=r'records\.jsonl, line 2, is not JSON .*hook says hello'):
        read_complete_lines(str(path))
