"""Storage URLs: kept and shown without credentials, whatever characters the password
holds, encoded or not, in the user info or the query; drivers' messages scrubbed."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from urllib.parse import quote, unquote

import optuna
import pytest
from conftest import skip_servers
from synthetic import SyntheticBackend

import autoplace
import autoplace.study._faults as faults
from autoplace import StorageError
from autoplace.study import mask_url, normalize_url, storage_at
from autoplace.study._url import scrub, storage_key

SERVER = [skip_servers, pytest.mark.storage]

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


def test_a_file_storage_is_the_file_it_names_however_its_path_is_spelled(tmp_path, monkeypatch):
    # three slashes or four, a bare path, a relative one: one file, one storage (the spill
    # file of a run is taken by the next, however its --storage is spelled)
    monkeypatch.chdir(tmp_path)
    log = tmp_path / "s.log"
    keys = {
        storage_key(url) for url in (f"journal:///{log}", f"journal:////{log}", str(log), "s.log")
    }
    assert keys == {f"journal:///{log}"}
    db = tmp_path / "s.db"
    assert storage_key("sqlite:///s.db") == storage_key(f"sqlite:///{db}") == f"sqlite:///{db}"
    assert storage_key(f"sqlite:///{tmp_path / 'other.db'}") != storage_key("sqlite:///s.db")


# -- end to end: nothing a tune writes, stores or prints holds the password ------------------

CHARS = [pytest.param(c, id=f"U+{ord(c):04X}") for c in SPECIAL]
SERVERS_ = [pytest.param(k, marks=SERVER) for k in ("postgresql", "mysql", "redis")]


def _everything(url: str, study: str, *files: Path) -> str:
    """All a tune left: the files given, and every attribute of the study and its trials."""
    texts = [f.read_text() for f in files if f.exists()]
    with storage_at(url) as storage:
        study_id = storage.get_study_id_from_name(study)
        texts.append(json.dumps(storage.get_study_user_attrs(study_id), default=str))
        texts.append(json.dumps(storage.get_study_system_attrs(study_id), default=str))
        for t in storage.get_all_trials(study_id):
            texts.append(json.dumps([t.user_attrs, t.system_attrs, t.params], default=str))
        optuna.delete_study(study_name=study, storage=storage)
    return "\n".join(texts)


def _tiny_tune(url: str, study: str, tmp_path: Path, **options):
    model = tmp_path / "model.py"
    model.write_text("# synthetic\n")
    small = dict(batch_sizes=(8,), precisions=("float32",), confirm=0, backend=SyntheticBackend())
    return autoplace.tune(model, storage=url, study=study, **{**small, **options})


def _with_password(storage_url: str, typed: str) -> str:
    scheme, rest = storage_url.split("://")
    user = {"postgresql": "postgres", "mysql": "root", "redis": ""}[scheme]
    return f"{scheme}://{user}:{typed}@{rest.split('@')[-1]}"


@pytest.mark.parametrize("storage_url", SERVERS_, indirect=True)
@pytest.mark.parametrize("encoded", [False, True], ids=["raw", "encoded"])
@pytest.mark.parametrize("char", CHARS)
def test_a_password_is_nowhere_a_tune_writes_stores_returns_or_says(
    storage_url, char, encoded, tmp_path, monkeypatch
):
    # The local PostgreSQL trusts its user and Redis's default user takes any password: the
    # tune runs whole, and all it leaves is searched. MariaDB's root has no password: one
    # given is refused, in one line. An unencoded password may make the URL unreadable or
    # name another host: one line too. The password is in none of it.
    monkeypatch.setattr(faults, "PATIENCE_S", 0.5)  # a host misread from the URL: no wait
    secret = password(char)
    url = _with_password(storage_url, quote(secret, safe="") if encoded else secret)
    study = f"secret-{uuid.uuid4().hex[:8]}"
    out = tmp_path / "autoplace.toml"
    try:
        result = _tiny_tune(url, study, tmp_path, out=out)
    except StorageError as exc:
        assert "\n" not in str(exc) and not leaked(str(exc), secret), str(exc)
        assert not (encoded and "mysql" not in url), f"refused: {exc}"
        assert not list(tmp_path.glob("*.toml"))
        return
    assert "mysql" not in url, "MariaDB's root took a password"
    shown = json.dumps([result.storage, result.document, result.answer.as_dict()], default=str)
    assert not leaked(shown + _everything(storage_url, study, out), secret)


@pytest.mark.parametrize("storage_url", [pytest.param("postgresql", marks=SERVER)], indirect=True)
@pytest.mark.parametrize("typed", ["Lefty%2FRighty7", "Lefty?Righty7"], ids=["encoded", "raw"])
def test_a_launchers_cache_and_the_stored_answer_keep_no_password(storage_url, typed, tmp_path):
    secret = unquote(typed)
    url = _with_password(storage_url, typed)
    model = tmp_path / "model.py"
    model.write_text(f"# synthetic {uuid.uuid4()}\n")  # a study of its own in the shared server
    cache = tmp_path / "cache"
    found = autoplace.recommend(
        model,
        storage=url,
        backend=SyntheticBackend(),
        cache_dir=cache,
        tune_options={"batch_sizes": (8,), "precisions": ("float32",), "confirm": 0},
    )
    assert found.source == "tuned"
    files = [p for p in cache.rglob("*") if p.is_file()]
    assert files and not leaked(json.dumps(found.as_dict(), default=str), secret)
    assert not leaked(_everything(storage_url, found.study, *files), secret)
