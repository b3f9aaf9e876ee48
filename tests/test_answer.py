"""Answer: the typed value a study keeps and recommend() caches, and its JSON form."""

from __future__ import annotations

import json

import pytest

from autoplace.answer import Answer, AnswerObjective, AnswerWorkload, Candidate, Compared


def an_answer() -> Answer:
    pick = Candidate("cpu:0", 64, "float32", 16, 1.5e5, True, 1e-3, 1.1e-3, 0.2, 2**20,
                     "measured", None)  # fmt: skip
    other = Candidate("cpu:0", 128, "bfloat16", 16, 1.4e5, False, 2e-3, 2.1e-3, 0.3, 2**21,
                      "predicted", 0.01)  # fmt: skip
    closest = Compared("cpu:0", 128, "bfloat16", 16, 1.07, 0.98, 1.17, "within", 2)
    return Answer(
        schema=2,
        created="2026-11-25T02:00:00+00:00",
        workload=AnswerWorkload("m.py", "abc", "mlp", (8, 16), 16),
        objective=AnswerObjective("time-to-finish", "minimize", "s", {"steps": 100}),
        hardware={"cpu": "x"},
        measured_on="host-a",
        software={"jax": "0.10.2", "jaxlib": "0.10.2", "answer_schema": 2},
        study="s",
        storage="sqlite:///studies.db",
        device_memory={"cpu:0": None},
        why=("one", "two"),
        closest=closest,
        equivalent=(closest,),
        findings=("the machine was busy",),
        candidates=(pick, other),
    )


def test_the_json_form_reads_back_as_the_same_value():
    answer = an_answer()
    data = json.loads(json.dumps(answer.as_dict()))
    assert Answer.from_dict(data) == answer
    assert data["objective"] == {"name": "time-to-finish", "direction": "minimize", "unit": "s",
                                 "steps": 100}  # fmt: skip
    assert data["study"] == {"name": "s", "storage": "sqlite:///studies.db"}
    assert answer.candidates[1].arm == ("cpu:0", "bfloat16", 16)


def test_fields_it_does_not_know_are_left_out_and_missing_optional_ones_are_none():
    data = an_answer().as_dict()
    data["candidates"][0]["from_a_newer_autoplace"] = 1
    del data["candidates"][0]["peak_bytes_source"]
    del data["closest"]
    read = Answer.from_dict(data)
    assert read.candidates[0].peak_bytes_source is None and read.closest is None


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d.pop("candidates"),
        lambda d: d["candidates"][0].pop("batch_size"),
        lambda d: d["candidates"][0].update(batch_size="big"),
        lambda d: d["candidates"][0].update(batch_size=True),
        lambda d: d["candidates"][0].pop("device"),
        lambda d: d["workload"].pop("sha256"),
        lambda d: d.update(answer_schema="two"),
        lambda d: d.update(objective=None),
    ],
)
def test_anything_else_is_not_an_answer(damage):
    data = an_answer().as_dict()
    damage(data)
    with pytest.raises(ValueError, match="not an autoplace answer"):
        Answer.from_dict(data)


@pytest.mark.parametrize("data", [None, [], "answer", 3])
def test_a_value_that_is_no_mapping_is_not_an_answer(data):
    with pytest.raises(ValueError, match="not an autoplace answer"):
        Answer.from_dict(data)
