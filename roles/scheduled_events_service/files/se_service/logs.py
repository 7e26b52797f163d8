# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Structured logging: journal fields, JSON lines or plain text.

Callers pass structured data as ``extra={'fields': {...}}``; every format
keeps it: the journal as ``SE_*`` fields (searchable with
``journalctl SE_EVENT_ID=...``), JSON as keys, text as ``key=value``.
"""

import json
import logging
import os
import socket
import struct
import sys
import time

LOGGER_NAME = 'scheduled-events-service'
SYSLOG_IDENTIFIER = 'scheduled-events-service'
JOURNAL_SOCKET = '/run/systemd/journal/socket'
FORMATS = ('auto', 'journal', 'json', 'text')
LEVELS = ('debug', 'info', 'warning', 'error')

# syslog priorities the journal expects in PRIORITY.
_PRIORITIES = {logging.DEBUG: 7, logging.INFO: 6, logging.WARNING: 4, logging.ERROR: 3, logging.CRITICAL: 2}


def _fields(record):
    fields = getattr(record, 'fields', None)
    return fields if isinstance(fields, dict) else {}


def _message(record):
    message = record.getMessage()
    if record.exc_info:
        message += '\n' + logging.Formatter().formatException(record.exc_info)
    return message


class JsonLinesFormatter(logging.Formatter):
    """One JSON object per record: time, level, message and the record's fields."""

    def format(self, record):
        entry = {'time': time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(record.created)) + '.%03dZ' % record.msecs,
                 'level': record.levelname.lower(), 'message': _message(record)}
        for key, value in _fields(record).items():
            entry.setdefault(key, value)
        return json.dumps(entry, sort_keys=True, default=str)


def escape_line_breaks(text):
    """``text`` on one line: backslash, CR and LF written as ``\\``, ``\\r``, ``\\n``.

    Event fields come from IMDS; a line break in one must not forge a log
    line of its own.
    """
    return text.replace('\\', '\\\\').replace('\r', '\\r').replace('\n', '\\n')


class TextFormatter(logging.Formatter):
    """``LEVEL message key=value ...`` on one line: what journald adds a time stamp to."""

    def format(self, record):
        parts = ['%s %s' % (record.levelname, _message(record))]
        for key, value in sorted(_fields(record).items()):
            parts.append('%s=%s' % (key, json.dumps(value, default=str) if not isinstance(value, str) else value))
        return escape_line_breaks(' '.join(parts))


def _journal_field(name, value):
    key = name.upper().encode('ascii', 'replace')
    data = value if isinstance(value, bytes) else str(value).encode('utf-8', 'replace')
    if b'\n' in data:
        # The native protocol's binary form: name, newline, 64-bit length, data.
        return key + b'\n' + struct.pack('<Q', len(data)) + data + b'\n'
    return key + b'=' + data + b'\n'


class JournalHandler(logging.Handler):
    """Sends records to journald through its native datagram socket, with fields.

    A datagram that journald refuses (too large) is written to stderr
    instead, which systemd also routes to the journal.
    """

    def __init__(self, socket_path=JOURNAL_SOCKET):
        super(JournalHandler, self).__init__()
        self.socket_path = socket_path
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.fallback = logging.StreamHandler(sys.stderr)
        self.fallback.setFormatter(TextFormatter())

    def emit(self, record):
        try:
            datagram = (_journal_field('MESSAGE', _message(record))
                        + _journal_field('PRIORITY', _PRIORITIES.get(record.levelno, 6))
                        + _journal_field('SYSLOG_IDENTIFIER', SYSLOG_IDENTIFIER))
            for key, value in _fields(record).items():
                datagram += _journal_field('SE_' + key, value if isinstance(value, str) else json.dumps(value, default=str))
            self.socket.sendto(datagram, self.socket_path)
        except (OSError, ValueError):
            self.fallback.emit(record)

    def close(self):
        self.socket.close()
        super(JournalHandler, self).close()


def resolve_format(log_format):
    """The concrete format for ``auto``: the journal when systemd connected stderr to it."""
    if log_format != 'auto':
        return log_format
    if os.environ.get('JOURNAL_STREAM') and os.path.exists(JOURNAL_SOCKET):
        return 'journal'
    return 'text'


def configure_logging(log_format='auto', level='info'):
    """(Re)configure the daemon's logger and return it."""
    logger = logging.getLogger(LOGGER_NAME)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    concrete = resolve_format(log_format)
    if concrete == 'journal':
        handler = JournalHandler()
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonLinesFormatter() if concrete == 'json' else TextFormatter())
    logger.addHandler(handler)
    logger.setLevel(getattr(logging, level.upper()))
    logger.propagate = False
    return logger


def get_logger():
    """The daemon's logger."""
    return logging.getLogger(LOGGER_NAME)
