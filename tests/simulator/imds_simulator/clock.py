"""The simulated clock and the timestamp forms the simulator reads and writes.

Every lifecycle time (NotBefore, Started, removal, impact end, the 24-hour
disable) is measured on this clock so a test can compress a 15-minute notice
into seconds with ``speed`` or jump over it with ``advance``.
"""

import calendar
import datetime
import threading
import time
from email.utils import formatdate

__all__ = ['ALL_BUT_STOPPED', 'SimClock', 'check_speed', 'epoch_of_utc', 'format_rfc1123', 'format_iso', 'parse_iso']

# A simulated millisecond a real second: the nearest a speed (always above 0)
# comes to a stopped clock, for a test or a stage that wants only its own
# moves of the clock to count, not the real time it takes between them.
ALL_BUT_STOPPED = 0.001


def format_rfc1123(epoch_seconds):
    """``Mon, 11 Apr 2022 22:26:58 GMT``: the form IMDS uses for NotBefore."""
    return formatdate(int(epoch_seconds), usegmt=True)


def format_iso(epoch_seconds):
    """ISO 8601 UTC with milliseconds, the form the control API reports."""
    moment = datetime.datetime.fromtimestamp(epoch_seconds, tz=datetime.timezone.utc)
    return moment.strftime('%Y-%m-%dT%H:%M:%S.') + '%03dZ' % (moment.microsecond // 1000)


def parse_iso(text, field='time'):
    """Epoch seconds of an ISO 8601 timestamp; a missing zone means UTC.

    Raises ValueError naming ``field`` so the caller can pass it on as is.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError('%s must be an ISO 8601 UTC timestamp such as 2022-04-11T22:10:00Z, got %r' % (field, text))
    try:
        moment = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError('%s must be an ISO 8601 UTC timestamp such as 2022-04-11T22:10:00Z, got %r'
                         % (field, text)) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.timestamp()


def check_speed(speed):
    """``speed`` as a float, or ValueError saying what a speed must be."""
    if isinstance(speed, bool) or not isinstance(speed, (int, float)) or not speed > 0:
        raise ValueError('speed must be a number greater than 0, got %r' % (speed,))
    if speed > 1000000:
        raise ValueError('speed must be at most 1000000, got %r' % (speed,))
    return float(speed)


class SimClock:
    """Simulated wall clock: real time scaled by ``speed`` from an anchor.

    Thread safe. ``advance`` is time passing (events may start, VMs may be
    disabled); ``set`` is a jump that the world treats as a re-basing.
    """

    def __init__(self, start_epoch=None, speed=1.0, monotonic=time.monotonic):
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._anchor_real = monotonic()
        self._anchor_sim = time.time() if start_epoch is None else float(start_epoch)
        self._speed = check_speed(speed)

    def _rebase(self):
        # Called with the lock held before any change so elapsed time so far
        # keeps the old speed.
        real_now = self._monotonic()
        self._anchor_sim += (real_now - self._anchor_real) * self._speed
        self._anchor_real = real_now

    def now(self):
        with self._lock:
            return self._anchor_sim + (self._monotonic() - self._anchor_real) * self._speed

    @property
    def speed(self):
        with self._lock:
            return self._speed

    def set_speed(self, speed):
        checked = check_speed(speed)
        with self._lock:
            self._rebase()
            self._speed = checked

    def advance(self, seconds):
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise ValueError('advance_seconds must be a number >= 0 (the clock never runs backwards), got %r'
                             % (seconds,))
        with self._lock:
            self._rebase()
            self._anchor_sim += float(seconds)

    def set(self, epoch_seconds):
        """Jump to ``epoch_seconds``; returns the jump size in simulated seconds."""
        with self._lock:
            self._rebase()
            jump = float(epoch_seconds) - self._anchor_sim
            self._anchor_sim = float(epoch_seconds)
            return jump

    def real_seconds_until(self, epoch_seconds):
        """Real seconds until the clock reads ``epoch_seconds`` (0 if past)."""
        with self._lock:
            sim_now = self._anchor_sim + (self._monotonic() - self._anchor_real) * self._speed
            return max(0.0, (epoch_seconds - sim_now) / self._speed)

    def describe(self):
        now = self.now()
        return {'now': format_iso(now), 'now_rfc1123': format_rfc1123(now),
                'epoch': round(now, 3), 'speed': self.speed}


def epoch_of_utc(year, month, day, hour=0, minute=0, second=0):
    """Epoch seconds of a UTC calendar time (for built-in scenarios)."""
    return float(calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)))
