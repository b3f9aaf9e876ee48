"""The ``autoplace`` command: a thin layer over the library.

Each command parses its options, calls one library function, and prints. Heavy
imports (JAX lives only in the worker; Optuna only in the tuner) happen inside
the commands, so ``autoplace --help`` starts fast.

* ``_app.py``: the app, its commands in the order ``--help`` lists them, and ``main``.
* ``_errors.py``: the one place autoplace's own errors become a line and an exit code.
* ``_options.py``: the options several commands share, and their checks.
* ``_measure.py``, ``_tune.py``, ``_recommend.py``, ``_reading.py`` (show, explain,
  report), ``_limits.py``, ``_cache.py``: one module per command group.
* ``_help.py``: how ``--help`` reads.
"""

from __future__ import annotations

from autoplace.cli._app import app, main

__all__ = ["app", "main"]
