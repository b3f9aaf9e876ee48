"""``autoplace cache list`` and ``cache clear``: the answers ``autoplace recommend`` cached."""

from __future__ import annotations

import json

import typer

from autoplace.cli._options import JsonOpt


def cache_list(as_json: JsonOpt = False) -> None:
    """The cached answers: model, workload, pick, when, under which software."""
    from autoplace.host import Cache
    from autoplace.recommending import listed

    cache = Cache()
    rows = listed(cache)
    if as_json:
        typer.echo(json.dumps({"cache": str(cache.root), "answers": rows}))
        return
    answers = sum(1 for row in rows if not row.get("damaged"))
    typer.echo(f"cache: {cache.root} ({answers} answer(s))")
    for row in rows:
        if row.get("damaged"):
            typer.echo(
                f"  {row['file']}  damaged ({row['why']}): ignored, refilled on the next "
                "look-up; `autoplace cache clear` removes it"
            )
            continue
        pick = row["pick"]
        what = f"{pick['device']} batch {pick['batch_size']} {pick['precision']}"
        if pick.get("width") is not None:
            what += f" width {pick['width']}"
        sw = row["software"] or {}
        typer.echo(
            f"  {row['key']}  {row['model']} [{row['workload']}, {row['objective']}]: {what}; "
            f"measured {row['measured']} ({row['source']}), jax {sw.get('jax')} "
            f"jaxlib {sw.get('jaxlib')}"
        )


def cache_clear() -> None:
    """Drop every cached answer (the studies they came from are kept)."""
    from autoplace.host import Cache

    cache = Cache()
    typer.echo(f"removed {cache.clear()} cached file(s) from {cache.root}")
