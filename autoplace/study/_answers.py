"""The answers finished tunes leave with their studies, found by a launcher's look-up."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autoplace.study._storage import ask_storage, missing_study_file, storage_at

#: The study attribute holding the latest finished tune's answer (see
#: ``autoplace.tuning._answer``), which :func:`autoplace.recommend` reads.
ANSWER_ATTR = "autoplace_answer"


def find_answer(
    url: str,
    *,
    name: str | None,
    suffix: str,
    on_wait: Callable[[str], None] | None = None,
) -> dict[str, Any] | None:
    """The answer kept with study ``name`` in the storage at ``url`` or, without a name,
    with the one study whose name ends with ``suffix``; ``None`` when there is none (a
    study file that is not there is not made). A server that is away is waited for as a
    tune waits (``on_wait`` hears a line)."""
    if missing_study_file(url) is not None:
        return None
    with storage_at(url, on_wait=on_wait, reading=True) as storage:
        names = study_names(storage, url)
        chosen = [name] if name is not None else [n for n in names if n.endswith(suffix)]
        if len(chosen) != 1 or chosen[0] not in names:
            return None
        answer = ask_storage(
            storage,
            url,
            lambda s: s.get_study_user_attrs(s.get_study_id_from_name(chosen[0])).get(ANSWER_ATTR),
        )
    return answer if isinstance(answer, dict) else None


def answers_ending(
    url: str, suffix: str, *, on_wait: Callable[[str], None] | None = None
) -> dict[str, dict[str, Any]]:
    """The answers kept with every study in the storage at ``url`` whose name ends with
    ``suffix``, by study name (a file's studies of one objective on one machine: one per
    workload and set of widths searched; none from a study file that is not there). A
    server that is away is waited for as a tune waits (``on_wait`` hears a line)."""

    def answers(storage: Any) -> dict[str, dict[str, Any]]:
        found = {}
        for study in storage.get_all_studies():
            if study.study_name.endswith(suffix):
                study_id = storage.get_study_id_from_name(study.study_name)
                answer = storage.get_study_user_attrs(study_id).get(ANSWER_ATTR)
                if isinstance(answer, dict):
                    found[study.study_name] = answer
        return found

    if missing_study_file(url) is not None:
        return {}
    with storage_at(url, on_wait=on_wait, reading=True) as storage:
        return ask_storage(storage, url, answers)


def study_names(storage: Any, url: str) -> list[str]:
    """The names of the studies in ``storage`` (opened from ``url``)."""
    return ask_storage(storage, url, lambda s: [study.study_name for study in s.get_all_studies()])
