"""Storage URLs: kept and shown without credentials, whatever characters the password
holds, encoded or not, in the user info or the query; drivers' messages scrubbed."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from autoplace.study import mask_url, normalize_url
from autoplace.study._url import scrub, storage_key

#: Every character a password in a URL can carry that means something in a URL, and some
#: that need encoding (a space, non-ASCII letters).
SPECIAL = [*"?/@#%:&= +!$';,", "é", "€", "密"]


def password(char: str) -> str:
    """A password around ``char``, each side long enough to be found on its own."""
    return f"Lefty{char}Righty7"


def leaked(text: str, secret: str) -> list[str]:
    """The parts of ``secret`` (whole, encoded, or a side of its special character) in ``text``."""
    parts = {secret, quote(secret, safe=""), "Lefty", "Righty7"}
    return [p for p in parts if p in text]


@pytest.mark.parametrize("encoded", [False, True], ids=["raw", "encoded"])
@pytest.mark.parametrize("char", SPECIAL)
@pytest.mark.parametrize(
    "template",
    [
        "postgresql://bob:{pw}@db.example:5432/studies?sslmode=require",
        "mysql://root:{pw}@127.0.0.1:3306/test",
        "redis://:{pw}@127.0.0.1:6379/0",
        "postgresql://bob@db.example:5432/studies?sslmode=require&password={pw}",
        "redis://127.0.0.1:6379/0?password={pw}&db=0",
    ],
    ids=["pg-userinfo", "mysql-userinfo", "redis-userinfo", "pg-query", "redis-query"],
)
def test_no_password_character_survives_in_the_url_kept(template, char, encoded):
    secret = password(char)
    url = template.format(pw=quote(secret, safe="") if encoded else secret)
    kept = mask_url(url)
    assert not leaked(kept, secret), kept
    assert not leaked(storage_key(url), secret)
    host = "db.example:5432" if "db.example" in url else "127.0.0.1"
    assert host in kept, kept  # still names the server
    # and a driver's message quoting it, or a piece of it, is scrubbed
    message = f"could not connect with {secret!r} ({quote(secret)}), as 'Lefty' then 'Righty7'"
    assert not leaked(scrub(message, url), secret)


def test_the_url_kept_has_no_credentials_and_the_rest_as_typed():
    assert mask_url("postgresql://bob:s3cret@db:5432/x") == "postgresql://db:5432/x"
    assert mask_url("redis://:pw@h:6379/0") == "redis://h:6379/0"
    assert mask_url("sqlite:///a.db") == "sqlite:///a.db"
    assert mask_url("sqlite:////tmp/a@b.db") == "sqlite:////tmp/a@b.db"  # a path, not a user
    # a user without a password is no secret (trust and peer authentication need it)
    url = "postgresql://postgres@127.0.0.1:5432/test"
    assert mask_url(url) == url
    # a secret query parameter goes, with what follows it (an unencoded & may be part of it)
    assert (
        mask_url("postgresql://u@h/db?sslmode=require&password=Pw/x&application_name=z")
        == "postgresql://u@h/db?sslmode=require"
    )
    assert mask_url("redis://h:6379/0?token=abc") == "redis://h:6379/0"
    # who reads a storage does not change which it is
    assert storage_key("postgresql://bob:pw@db/x") == storage_key("postgres://alice@db/x")


def test_a_short_piece_of_a_password_is_scrubbed_where_it_stands_alone():
    url = "redis://:ab/cd@127.0.0.1:6379/0"  # Redis reads the port as 'ab'
    said = scrub("Port could not be cast to integer value as 'ab'", url)
    assert said == "Port could not be cast to integer value as '***'"
    assert scrub("cannot reach the database", url) == "cannot reach the database"


def test_urls_people_type_are_normalised(tmp_path):
    assert normalize_url("mysql://root@h/db") == "mysql+pymysql://root@h/db"
    assert normalize_url("postgres://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normalize_url(str(tmp_path / "s.db")).startswith("sqlite:////")
    assert normalize_url(str(tmp_path / "s.log")).startswith("journal:////")
