"""Append-only, sequence-numbered records (requests, approvals, impacts).

A reader asks for everything after the last sequence number it saw, so a
test can follow the log without missing or re-reading entries.
"""

import threading

__all__ = ['SequencedLog']


class SequencedLog:
    """Thread-safe list of dicts, each given an increasing ``seq`` from 1.

    Only the newest ``capacity`` entries are kept so a simulator left running
    for days does not grow without bound; sequence numbers keep counting.
    """

    def __init__(self, capacity=50000):
        self._capacity = capacity
        self._lock = threading.Lock()
        self._entries = []
        self._next_seq = 1

    def append(self, entry):
        """Store ``entry`` (a dict, updated in place with its seq); return it."""
        with self._lock:
            entry['seq'] = self._next_seq
            self._next_seq += 1
            self._entries.append(entry)
            if len(self._entries) > self._capacity:
                del self._entries[:len(self._entries) - self._capacity]
            return entry

    def since(self, seq=0):
        """Copies of the entries whose seq is greater than ``seq``."""
        with self._lock:
            return [dict(entry) for entry in self._entries if entry['seq'] > seq]

    def update(self, entry, **changes):
        """Change fields of an entry under the log's lock (for late results)."""
        with self._lock:
            entry.update(changes)

    def clear(self):
        with self._lock:
            self._entries = []
            self._next_seq = 1
