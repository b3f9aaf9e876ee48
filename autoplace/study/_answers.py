"""The answers finished tunes leave with their studies, found by a launcher's look-up."""

from __future__ import annotations

from typing import Any

from autoplace.errors import StorageError, first_line
from autoplace.study._log import ANSWER_ATTR
from autoplace.study._storage import mask_url, storage_at


def find_answer(url: str, *, name: str | None, suffix: str) -> dict[str, Any] | None:
    """The answer kept with study ``name`` in the storage at ``url`` or, without a name,
    with the one study whose name ends with ``suffix``; ``None`` when there is none."""
    with storage_at(url) as storage:
        try:
            studies = storage.get_all_studies()
            names = [s.study_name for s in studies]
            chosen = [name] if name is not None else [n for n in names if n.endswith(suffix)]
            if len(chosen) != 1 or chosen[0] not in names:
                return None
            study_id = storage.get_study_id_from_name(chosen[0])
            answer = storage.get_study_user_attrs(study_id).get(ANSWER_ATTR)
        except Exception as exc:
            raise StorageError(
                f"cannot read study storage {mask_url(url)}: {first_line(exc)}; check the URL "
                "and that the server is up (or pass another storage)"
            ) from exc
    return answer if isinstance(answer, dict) else None


def answers_ending(url: str, suffix: str) -> dict[str, dict[str, Any]]:
    """The answers kept with every study in the storage at ``url`` whose name ends with
    ``suffix``, by study name (a file's studies of one objective on one machine: one per
    workload and set of widths searched)."""
    found = {}
    with storage_at(url) as storage:
        try:
            for study in storage.get_all_studies():
                if study.study_name.endswith(suffix):
                    study_id = storage.get_study_id_from_name(study.study_name)
                    answer = storage.get_study_user_attrs(study_id).get(ANSWER_ATTR)
                    if isinstance(answer, dict):
                        found[study.study_name] = answer
        except Exception as exc:
            raise StorageError(
                f"cannot read study storage {mask_url(url)}: {first_line(exc)}; check the URL "
                "and that the server is up (or pass another storage)"
            ) from exc
    return found
