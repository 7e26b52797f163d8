# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Timestamps of Scheduled Events. Internal use only.

IMDS documents ``NotBefore`` in the RFC 1123 form
(``Mon, 11 Apr 2022 22:26:58 GMT``) and sends an empty string once an event has
Started. Other forms have been seen from proxies and hand-made documents, so
several are accepted; anything else is kept raw and reported, never fatal.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import re
import time
from email.utils import parsedate_tz

ISO_UTC_FORMAT = '%Y-%m-%dT%H:%M:%SZ'

# ISO 8601 with a 'T' or space separator, optional fraction and optional zone
# (Z, +hh:mm, +hhmm, +hh). Written by hand because datetime.fromisoformat is
# missing on the oldest Pythons a managed node may run and rejects 'Z' before
# Python 3.11.
_ISO_8601 = re.compile(
    r'^(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})'
    r'[T ](?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:[.,]\d+)?)?'
    r'\s*(?P<zone>Z|z|UTC|GMT|[+-]\d{2}(?::?\d{2})?)?$'
)

# US-style timestamps such as '4/11/2022 10:26:58 PM' (what Windows tooling
# prints when it re-serializes the document).
_US_DATETIME = re.compile(
    r'^(?P<month>\d{1,2})/(?P<day>\d{1,2})/(?P<year>\d{4})\s+'
    r'(?P<hour>\d{1,2}):(?P<minute>\d{2})(?::(?P<second>\d{2}))?\s*(?P<ampm>AM|PM|am|pm)?'
    r'(?:\s*(?P<zone>Z|UTC|GMT))?$'
)


def _epoch_from_parts(year, month, day, hour, minute, second, offset_seconds=0):
    # timegm rejects nothing, so range checks are ours: a 31st of February
    # must not silently become a date in March.
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour <= 23 and minute <= 59 and second <= 60):
        raise ValueError('date or time field out of range')
    if day > calendar.monthrange(year, month)[1]:
        raise ValueError('day out of range for month')
    return calendar.timegm((year, month, day, hour, minute, min(second, 59), 0, 0, 0)) - offset_seconds


# Real zones stay within a day of UTC; '+9999' is junk, not a 99-hour offset.
_MAX_ZONE_OFFSET_SECONDS = 24 * 3600


def _checked_offset(offset_seconds):
    if abs(offset_seconds) >= _MAX_ZONE_OFFSET_SECONDS:
        raise ValueError('zone offset out of range')
    return offset_seconds


def _zone_offset_seconds(zone):
    if zone is None or zone.upper() in ('Z', 'UTC', 'GMT'):
        return 0
    sign = -1 if zone[0] == '-' else 1
    digits = zone[1:].replace(':', '')
    hours = int(digits[:2])
    minutes = int(digits[2:4]) if len(digits) > 2 else 0
    if minutes > 59:
        raise ValueError('zone minutes out of range')
    return _checked_offset(sign * (hours * 3600 + minutes * 60))


def _parse_iso_8601(text):
    match = _ISO_8601.match(text)
    if not match:
        return None
    parts = match.groupdict()
    return _epoch_from_parts(
        int(parts['year']), int(parts['month']), int(parts['day']),
        int(parts['hour']), int(parts['minute']), int(parts['second'] or 0),
        _zone_offset_seconds(parts['zone']),
    )


def _parse_us_datetime(text):
    match = _US_DATETIME.match(text)
    if not match:
        return None
    parts = match.groupdict()
    hour = int(parts['hour'])
    if parts['ampm']:
        if not 1 <= hour <= 12:
            raise ValueError('hour out of range for AM/PM')
        hour = hour % 12 + (12 if parts['ampm'].upper() == 'PM' else 0)
    return _epoch_from_parts(
        int(parts['year']), int(parts['month']), int(parts['day']),
        hour, int(parts['minute']), int(parts['second'] or 0),
    )


def _parse_rfc_2822_family(text):
    # Covers RFC 1123 (the documented form), RFC 850 and asctime. A missing
    # zone is read as UTC, as IMDS only ever speaks GMT.
    parsed = parsedate_tz(text)
    if parsed is None:
        return None
    year, month, day, hour, minute, second = parsed[:6]
    offset = _checked_offset(parsed[9] or 0)
    return _epoch_from_parts(year, month, day, hour, minute, second, offset)


def parse_timestamp(text):
    """Return the UTC epoch seconds (int) of ``text``, or None if unparseable.

    Accepts RFC 1123/RFC 850/asctime, ISO 8601 (with or without zone, which
    then means UTC) and US-style ``M/D/YYYY h:mm:ss AM``. Never raises.
    """
    if not isinstance(text, str):
        return None
    text = text.strip()
    if not text:
        return None
    try:
        # Every accepted form is ASCII; without this, regex \d and int() would
        # also read digits of other scripts.
        text.encode('ascii')
    except UnicodeEncodeError:
        return None
    for parser in (_parse_rfc_2822_family, _parse_iso_8601, _parse_us_datetime):
        try:
            epoch = parser(text)
            if epoch is not None:
                # Callers format what they get; an epoch the platform's gmtime
                # cannot represent must count as unreadable here, not raise there.
                time.gmtime(epoch)
        except (ValueError, OverflowError, IndexError, TypeError, OSError):
            epoch = None
        if epoch is not None:
            return epoch
    return None


def format_iso_utc(epoch):
    """Format epoch seconds as ``YYYY-MM-DDTHH:MM:SSZ``."""
    return time.strftime(ISO_UTC_FORMAT, time.gmtime(epoch))


def format_rfc_1123(epoch):
    """Format epoch seconds the way IMDS writes NotBefore."""
    return time.strftime('%a, %d %b %Y %H:%M:%S GMT', time.gmtime(epoch))


def normalize_not_before(raw):
    """Normalize a NotBefore value.

    Returns ``(iso_or_none, warning_or_none)``. The empty string (an event that
    has Started) and a missing value give ``(None, None)``; a value that cannot
    be read gives ``(None, warning)`` so callers keep the raw value and go on.
    """
    if raw is None:
        return None, None
    if not isinstance(raw, str):
        return None, 'NotBefore %r is not a string; kept raw and treated as unknown' % (raw,)
    if not raw.strip():
        return None, None
    epoch = parse_timestamp(raw)
    if epoch is None:
        return None, 'NotBefore %r is not a timestamp this collection understands; kept raw and treated as unknown' % (raw,)
    return format_iso_utc(epoch), None


def seconds_until(iso_utc, now=None):
    """Whole seconds from ``now`` (epoch, default: the current time) until ``iso_utc``.

    None when ``iso_utc`` is None. Negative when the moment has passed.
    """
    if iso_utc is None:
        return None
    epoch = parse_timestamp(iso_utc)
    if epoch is None:
        return None
    if now is None:
        now = time.time()
    return int(round(epoch - now))
