import pytest
import tomli_w

from autoplace import ConfigFileError
from autoplace import recommendation as rec


def document(**changes):
    doc = {
        "schema_version": rec.SCHEMA_VERSION,
        "created": "2026-11-22T00:00:00+00:00",
        "recommendation": {
            "device": "cpu:0", "batch_size": 64, "precision": "bfloat16", "width": None,
            "figures": {"step_s": 0.01, "peak_bytes": 123, "deviation_vs_float32": None},
        },
        "objective": {"name": "throughput", "direction": "maximize"},
        "workload": {"path": "/x/model.py", "sha256": "ab" * 32, "name": "mlp"},
        "study": {"name": "s", "storage": "postgresql://u:***@h/db"},
    }  # fmt: skip
    doc.update(changes)
    return doc


def test_round_trip_drops_nulls_and_keeps_the_rest(tmp_path):
    path = rec.write(tmp_path / "a" / "autoplace.toml", document())
    back = rec.read(path)
    assert back["recommendation"]["batch_size"] == 64
    assert "width" not in back["recommendation"]
    assert back["recommendation"]["figures"] == {"step_s": 0.01, "peak_bytes": 123}
    assert back["study"]["storage"] == "postgresql://u:***@h/db"


def test_write_is_atomic_and_leaves_no_temporary_files(tmp_path):
    target = tmp_path / "autoplace.toml"
    target.write_text("old")
    rec.write(target, document())
    assert [p.name for p in tmp_path.iterdir()] == ["autoplace.toml"]
    assert rec.read(target)["schema_version"] == rec.SCHEMA_VERSION == 4


def test_a_version_1_file_is_still_read(tmp_path):
    # Version 1 is version 2 without the [explanation] section.
    doc = {k: v for k, v in document().items() if k != "explanation"}
    path = tmp_path / "old.toml"
    path.write_text(tomli_w.dumps(rec._clean({**doc, "schema_version": 1})))
    back = rec.read(path)
    assert back["schema_version"] == 1 and back["recommendation"]["batch_size"] == 64


def test_write_refuses_a_document_without_the_schema_version(tmp_path):
    with pytest.raises(ValueError):
        rec.write(tmp_path / "x.toml", document(schema_version=None))


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("schema_version = 99\n", "schema version 99"),
        ("this is = = not toml", "not valid TOML"),
        ("schema_version = 1\ncreated = 'x'\n", "missing"),
        ("", r"is not an autoplace recommendation file \(empty, with no schema_version\)"),
        ("[tool.black]\nline-length = 88\n", r"\(a TOML file of \[tool\], with no schema_version"),
        ('schema_version = "3"\n', 'has schema_version = "3", a string, where it is an integer'),
        ("schema_version = [3]\n", "has schema_version as an array where it is an integer"),
    ],
)
def test_damaged_or_future_files_get_one_clear_error(tmp_path, text, match):
    path = tmp_path / "autoplace.toml"
    path.write_text(text)
    with pytest.raises(ConfigFileError, match=match) as info:
        rec.read(path)
    assert "\n" not in str(info.value)
    assert info.value.exit_code == 2


def test_a_binary_file_is_not_a_text_file(tmp_path):
    path = tmp_path / "autoplace.toml"
    path.write_bytes(b"schema_version = 3\n\xff\xfe")
    with pytest.raises(ConfigFileError, match=r"is not a text file \(not UTF-8 at byte 19\)"):
        rec.read(path)


def test_missing_file_says_how_to_make_one(tmp_path):
    with pytest.raises(ConfigFileError, match="autoplace tune"):
        rec.read(tmp_path / "nope.toml")


def test_a_version_2_file_is_still_read_and_shown(tmp_path, capsys):
    # Version 2 had runner_up and within_noise (a margin and a noise), no closest.
    doc = document()
    doc["recommendation"]["runner_up"] = {
        "device": "cpu:0", "batch_size": 32, "precision": "float16", "width": None,
        "margin": 0.105, "noise": 0.037, "significant": True, "basis": "paired over 9 turns",
    }  # fmt: skip
    path = tmp_path / "v2.toml"
    path.write_text(tomli_w.dumps(rec._clean({**doc, "schema_version": 2})))
    back = rec.read(path)
    from autoplace.report import recommendation_report

    recommendation_report(back)
    out = " ".join(capsys.readouterr().out.split())
    # said as every comparison is now: a ratio and its interval, never "10.5% ahead (±3.7%)"
    assert "against the closest: 1.10x (95%: 1.07–1.14) as fast as cpu:0 batch=32 float16" in out
    assert "faster in every window" in out
