"""Reading a JSON-lines file that other processes are still appending to.

The tests' hooks and task files each append a JSON line to a record file
while the test reads it (the simulator's impact commands can do the same). A
line whose newline has not been written yet is still being written: reading
it then would see half a record, so it is left for the next read.
"""

import json

__all__ = ['read_complete_lines']


def read_complete_lines(path):
    """The values of the complete lines of ``path``, in order; ``[]`` if it does not exist yet.

    A complete line that is not JSON raises ValueError naming the file and
    the line: a writer broke the format, and skipping it would hide that.
    """
    try:
        with open(path, encoding='utf-8') as handle:
            text = handle.read()
    except FileNotFoundError:
        return []
    values = []
    for number, line in enumerate(text[:text.rfind('\n') + 1].splitlines(), 1):
        if not line.strip():
            continue
        try:
            values.append(json.loads(line))
        except ValueError as exc:
            raise ValueError('%s, line %d, is not JSON (%s): %r' % (path, number, exc, line[:200])) from exc
    return values
