"""The answers finished tunes leave with their studies, found by a launcher's look-up.

A study keeps one answer per question (:class:`autoplace.answer.Question`: what a tune
searched), under :func:`answer_attr`: a tune narrowed to one batch size never replaces the
answer of a tune that searched them all, though both add to the study's measurements."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from autoplace.answer import Question
from autoplace.study._storage import ask_storage, missing_study_file, storage_at

#: The study attribute holding a finished tune's answer (see ``autoplace.tuning._answer``),
#: which :func:`autoplace.recommend` reads; followed by ``:`` and the question's key.
ANSWER_ATTR = "autoplace_answer"


def answer_attr(answer: Mapping[str, Any]) -> str:
    """The study attribute ``answer`` is kept under: its question's."""
    question = answer.get("question")
    return f"{ANSWER_ATTR}:{Question.from_dict(question).key}" if question else ANSWER_ATTR


def stored_answers(
    url: str,
    *,
    name: str | None = None,
    suffix: str = "",
    on_wait: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Every answer kept with study ``name`` in the storage at ``url`` or, without a name,
    with every study whose name ends with ``suffix`` (a file's studies of one objective on
    one machine: one per workload and set of widths searched), one per question; none from
    a study file that is not there (it is not made). A server that is away is waited for as
    a tune waits (``on_wait`` hears a line)."""

    def answers(storage: Any) -> list[dict[str, Any]]:
        names = [s.study_name for s in storage.get_all_studies()]
        chosen = [name] if name is not None else [n for n in names if n.endswith(suffix)]
        found = []
        for study in (n for n in chosen if n in names):
            attrs = storage.get_study_user_attrs(storage.get_study_id_from_name(study))
            found += [
                v
                for k, v in attrs.items()
                if (k == ANSWER_ATTR or k.startswith(f"{ANSWER_ATTR}:")) and isinstance(v, dict)
            ]
        return found

    if missing_study_file(url) is not None:
        return []
    with storage_at(url, on_wait=on_wait, reading=True) as storage:
        return ask_storage(storage, url, answers)


def study_names(storage: Any, url: str) -> list[str]:
    """The names of the studies in ``storage`` (opened from ``url``)."""
    return ask_storage(storage, url, lambda s: [study.study_name for study in s.get_all_studies()])
