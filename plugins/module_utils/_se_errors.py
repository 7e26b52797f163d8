# -*- coding: utf-8 -*-
# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Exceptions of the Scheduled Events core. Internal use only.

Every failure the core can meet is one of these, so that each consumer turns
them into its own idiom in one place: modules call ``fail_json(msg=str(e))``,
controller plugins raise ``AnsibleError(str(e))``, the service daemon logs and
keeps going. Messages are written for the person who has to act on them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ScheduledEventsError(Exception):
    """Base of every error raised by the Scheduled Events core.

    ``retryable`` tells callers that loop (pollers, waiters) whether trying
    again later can help.
    """

    retryable = False

    def __init__(self, message, url=None):
        super(ScheduledEventsError, self).__init__(message)
        self.message = message
        self.url = url


class InvalidParameterError(ScheduledEventsError):
    """A value given by the user (option, config file) cannot be used."""


class ImdsUnreachableError(ScheduledEventsError):
    """No HTTP answer: connection refused, reset, DNS or routing failure."""

    retryable = True


class ImdsTimeoutError(ImdsUnreachableError):
    """IMDS accepted the connection but did not answer in time."""


class ImdsRedirectError(ScheduledEventsError):
    """IMDS never redirects; a redirect means something sits in between."""


class ImdsHttpError(ScheduledEventsError):
    """IMDS answered with an HTTP error status.

    ``status`` is the HTTP status, ``imds_message`` the ``error`` text IMDS put
    in its JSON body (or the raw body when it was not JSON), ``headers`` the
    response headers (lower-case names) and ``retry_after`` the seconds a
    Retry-After header asked for (None without one), so that a poller can
    honour it after the request itself gave up.
    """

    def __init__(self, message, url=None, status=None, imds_message=None, body=None, headers=None, retry_after=None):
        super(ImdsHttpError, self).__init__(message, url=url)
        self.status = status
        self.imds_message = imds_message
        self.body = body
        self.headers = dict(headers or {})
        self.retry_after = retry_after

    @property
    def retryable(self):
        return self.status in (410, 429) or (self.status is not None and self.status >= 500)


class RequestCancelledError(ScheduledEventsError):
    """The caller asked to stop (a service shutting down) while a request was being retried."""


class MalformedDocumentError(ScheduledEventsError):
    """IMDS answered 200 but the body is not a Scheduled Events document."""

    retryable = True
