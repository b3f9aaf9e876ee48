"""Storage URLs: the spellings people type, and the URL without its credentials.

A storage URL may carry a password, in its user info (``user:PASSWORD@host``) or its query
(``?password=...``), typed unencoded as often as not (``/``, ``?``, ``#``, ``@``, ``%``
inside it). autoplace keeps and shows the URL only without credentials
(:func:`mask_url`): the study, the recommendation file, the cache and the answer stored
with a shared study hold that, and a teammate reads them with their own credentials.
Every message a driver writes passes through :func:`scrub` before a user sees it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote, unquote

#: Schemes whose "URL" is a file path: no credentials, and an ``@`` is part of the path.
_FILE_SCHEMES = ("sqlite", "journal")
#: What follows the ``@`` that ends the user info: a host (or ``[v6]``), a port, then the
#: path, query or the end. Read from the last ``@`` back, so that a password holding an
#: unencoded ``@``, ``/``, ``?`` or ``#`` is never mistaken for the host.
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]*\]|[\w.%-]*)(:\d*)?([/?#]|$)")
#: A query parameter whose name holds one of these carries a secret (``?password=``).
_SECRET_PARAM = re.compile(
    r"[?&][^=&?#]*(?:pass|pwd|secret|token|auth|key|credential)[^=&?#]*=", re.IGNORECASE
)
#: What splits a secret into the pieces a driver may quote on their own: whatever is not
#: an ASCII letter or digit (a URL delimiter, a ``+`` read as a space, a non-ASCII letter
#: decoded wrongly).
_DELIMITERS = re.compile(r"[^A-Za-z0-9]+")
#: Pieces shorter than this are scrubbed only where they stand alone (``'ab'``), so that
#: a one-letter piece does not blank every word holding that letter.
_SHORT = 3


def normalize_url(url: str) -> str:
    """Accept the spellings people type: a bare ``.db``/``.log`` path, ``mysql://``, ``postgres://``."""
    if "://" not in url:
        if url.endswith((".log", ".jsonl", ".journal")):
            return f"journal:///{Path(url).resolve()}"
        return f"sqlite:///{Path(url).resolve()}"
    scheme, rest = url.split("://", 1)
    # Name the drivers we install, whatever SQLAlchemy's default for the dialect is.
    scheme = {
        "postgres": "postgresql+psycopg",
        "postgresql": "postgresql+psycopg",
        "mysql": "mysql+pymysql",
    }.get(scheme, scheme)
    return f"{scheme}://{rest}"


def file_path(url: str) -> Path | None:
    """The file a SQLite or Journal storage lives in (``None`` for a server, and for an
    in-memory SQLite database: ``sqlite://``, ``sqlite:///:memory:``)."""
    url = normalize_url(url)
    scheme, rest = url.split("://", 1)
    if scheme == "journal":  # journal:///abs/path, and journal:////abs/path as normalized
        return Path("/" + rest.lstrip("/")) if rest.startswith("/") else Path(rest)
    name = rest[1:].split("?", 1)[0] if rest.startswith("/") else ""
    if scheme.startswith("sqlite") and name not in ("", ":memory:"):
        return Path(name)
    return None


def mask_url(url: str) -> str:
    """The URL as autoplace shows and keeps it: without credentials. User info holding a
    password goes whole (``postgresql://bob:pw@db/x`` becomes ``postgresql://db/x``; a lone
    user name, which is no secret, stays), and so does a query parameter carrying a secret
    (``?password=``, ``?token=``), with everything after it (an unencoded ``&`` may be part
    of the secret). Where an unencoded password makes the URL ambiguous, whatever could be
    part of it goes: the URL kept may then say less, never the secret."""
    if "://" not in url:
        return url
    parts = _parse(url)
    return f"{parts.scheme}://{parts.user}{parts.kept}"


def storage_key(url: str) -> str:
    """The storage's identity, whoever reads it: its URL with no user info at all (two
    users of one server share its studies); for a SQLite or Journal file, the file it
    names, resolved (``journal:///x`` and ``journal:////x`` are one storage, and so are a
    relative path and the absolute one it names)."""
    url = normalize_url(url)
    if "://" not in url:
        return url
    path = file_path(url)
    if path is not None:
        return f"{url.split('://', 1)[0]}:///{path.resolve()}"
    parts = _parse(url)
    return f"{parts.scheme}://{parts.kept.partition('?')[0]}"


def scrub(text: str, url: str) -> str:
    """``text`` (a driver's message) with every credential of ``url`` replaced by ``***``:
    the password and the secret query values, raw, decoded and encoded, and each piece of
    them between URL delimiters (a driver that misparses an unencoded password quotes a
    piece: Redis's "Port could not be cast to integer value as 'ab'")."""
    for secret in sorted(_secrets(url), key=len, reverse=True):
        if len(secret) >= _SHORT:
            text = text.replace(secret, "***")
        else:
            text = re.sub(rf"(?<!\w){re.escape(secret)}(?!\w)", "***", text)
    return text


class _Parts(NamedTuple):
    scheme: str
    #: The user name and its ``@`` when the user info holds no password, else "".
    user: str
    #: Host, port, path and the query up to its first secret.
    kept: str
    #: What may be a credential, as written in the URL.
    secrets: tuple[str, ...]


def _parse(url: str) -> _Parts:
    """Split ``url`` (with ``://``) into what is kept and what may be a credential.

    The query's secret starts at its first ``?NAME=`` or ``&NAME=`` whose name says secret.
    The user info ends at the last ``@`` before that which a host follows (else at the last
    ``@`` a host follows anywhere), read from the end so that a password holding an
    unencoded ``@``, ``/``, ``?`` or ``#`` is never taken for the host. File schemes have
    no credentials (an ``@`` is part of the path)."""
    scheme, rest = url.split("://", 1)
    if scheme.split("+")[0] in _FILE_SCHEMES:
        return _Parts(scheme, "", rest, ())
    found = _SECRET_PARAM.search(rest)
    q_start = found.start() if found else len(rest)
    ats = [m.start() for m in re.finditer("@", rest) if _HOST.match(rest, m.start() + 1)]
    at = max([a for a in ats if a < q_start], default=max(ats, default=None))
    secrets: list[str] = []
    if found:  # the value, and what followed it (it may be part of it)
        secrets.append(rest[found.end() :])
    user, head = "", 0
    if at is not None:
        userinfo, head = rest[:at], at + 1
        if ":" in userinfo:
            secrets.append(userinfo.split(":", 1)[1])
        else:
            user = f"{userinfo}@"
    kept = rest[head:q_start] if head <= q_start else ""
    kept = kept.split("#", 1)[0].rstrip("?&")
    return _Parts(scheme, user, kept, tuple(secrets))


def _secrets(url: str) -> set[str]:
    """Everything in ``url`` that is, or may be part of, a credential."""
    if "://" not in url:
        return set()
    out: set[str] = set()
    for secret in _parse(url).secrets:
        for form in (secret, unquote(secret)):
            out.update((form, quote(form, safe="")))
            out.update(p for p in _DELIMITERS.split(form) if p)
    out.discard("")
    return out
