"""The password in a URL's user info (``https://user:pw@host``), found in any text and masked.

A value shown in an error may be a URL that carries one (an invalid ``base_url``), and so may a
log line or a tool's output; a password is as secret as an API key. The config's errors and the
redactor both mask with this one pattern, which has no import of its own: the redactor runs in
the light read-only commands, and the config's errors must not load the redactor.

Examples:
    >>> mask_url_passwords("see https://me:hunter2@example.com/x", "***")
    'see https://me:***@example.com/x'
    >>> mask_url_passwords("https://me:p@ss@example.com/?to=a@b", "***")
    'https://me:***@example.com/?to=a@b'
"""

from __future__ import annotations

import re

__all__ = ["CREDENTIAL_QUERY_NAMES", "mask_url_passwords"]

# Query parameters that carry a credential (``?api-key=...``, ``&token=...``): the config keeps
# their values in a URL setting as secrets, and the log redactor masks them in any URL.
CREDENTIAL_QUERY_NAMES = (
    r"api[_-]?key|key|token|access[_-]?token|auth[_-]?token|refresh[_-]?token"
    r"|client[_-]?secret|secret|password|sig|signature"
)

# Groups 1 and 2 keep all but the password. A run of scheme characters is tried once, if it
# ends in "://", from its first letter after a word boundary (group 1 is the run before that):
# a plain ``\b[a-z][a-z0-9+.-]*://`` scanned the run again from each such letter, O(n**2) on
# "a.a.a.a..." (16,000 characters: 1 s).
#
# The password runs to the last "@" of the authority (which ends at "/", "?", "#" or a space),
# as URL readers take it (urllib, WHATWG): a password written with an "@" of its own
# (``me:p@ss@host``) is masked whole, not cut at its first "@" with the rest shown.
_URL_PASSWORD = re.compile(
    r"(?i)(?<![a-z0-9+.-])(?=[a-z0-9+.-]*://)(?>([a-z0-9+.-]*?)\b(?=[a-z]))"
    r"([a-z0-9+.-]*://[^/\s:@]*:)[^/\s@]+(?:@[^/?#\s@]*)*?(@)(?![^/?#\s@]*@)"
)


def mask_url_passwords(text: str, mask: str) -> str:
    """``text`` with the password of every URL in it replaced by ``mask``."""
    return _URL_PASSWORD.sub(lambda m: f"{m[1]}{m[2]}{mask}{m[3]}", text)
