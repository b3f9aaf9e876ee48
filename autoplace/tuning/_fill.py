"""``autoplace explain --measure``: measure, in the study, the points its cost lines still
lack (each arm that ran at one batch size gets its neighbour), resuming the tune with the
:class:`~._fit_points.FitPoints` strategy."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from autoplace import recommendation
from autoplace._paths import check_length, shown
from autoplace.errors import BadInputError
from autoplace.study import (
    close_storage,
    default_url,
    normalize_url,
    open_storage,
    refuse_foreign_tables,
)
from autoplace.tuning._reading import find_study, refuse_gone, run_of, stored_url

_SECOND = dt.timedelta(seconds=1)


def fill_fit(
    source: str | Path,
    workload: str | None = None,
    *,
    storage: str | None = None,
    study: str | None = None,
    objective: str = "throughput",
    backend: Any = None,
) -> int:
    """Measure the points the cost-model lines still lack (see :func:`explain`); return how
    many measurements that took. ``backend``: where to measure (default: a worker)."""
    from autoplace.tuning._fit_points import FitPoints
    from autoplace.tuning._session import tune

    path = check_length(source, "recommendation or model file")
    if not path.is_file():
        raise BadInputError(f"no file at {shown(path)}: pass a recommendation file or a model file")
    options: dict[str, Any] = {"storage": storage, "study": study, "objective": objective}
    out: Path | None = None
    model = path
    if path.suffix == ".toml":
        doc = recommendation.read(path)
        model, workload, out = Path(doc["workload"]["path"]), doc["workload"]["name"], path
        space = doc.get("search_space", {})
        options.update(
            storage=storage or stored_url(doc, path),
            study=study or doc["study"]["name"],
            objective=doc["objective"]["name"],
            devices=space.get("devices"),
            batch_sizes=space.get("batch_sizes"),
            precisions=space.get("precisions"),
            widths=space.get("widths") or None,
            **run_of(doc),
        )
        if not model.is_file():
            raise BadInputError(
                f"{path} was made from {model}, which is gone: pass the model file instead"
            )
        if storage is None:  # measuring into a new, empty study would explain nothing
            refuse_gone(options["storage"], path)
    elif options["study"] is None:
        url = normalize_url(storage) if storage else default_url()
        refuse_foreign_tables(url)
        opened = open_storage(url, reading=True)
        try:
            options["study"] = find_study(opened, url, path, workload, objective)
        finally:
            close_storage(opened)
    result = tune(
        model, workload=workload, out=out, strategy=FitPoints(), backend=backend, **options
    )
    return result.new_trials
