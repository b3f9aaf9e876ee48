"""Steps per call: K steps inside one call, the fixed cost per call paid once.

A ``lax.scan`` over K batches stacked along a new leading axis (Keras's
``steps_per_execution``): the K batches cross in one transfer, and K fused steps leave the
state of K plain ones. JAX is imported when :func:`fuse` or :func:`stack` is called.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from autoplace.errors import BadInputError


def fuse(
    step: Callable[[Any, Any], Any], k: int, kind: Literal["train", "infer"] = "train"
) -> Callable[[Any, Any], Any]:
    """``fused(state, batches)``: ``k`` calls of ``step`` in one call.

    ``batches`` has a leading axis of ``k`` (:func:`stack`). ``kind="train"`` returns the
    state after the ``k`` steps; ``kind="infer"`` the ``k`` predictions, stacked. Jit it as
    you would the step (``jax.jit(fuse(step, 16), donate_argnums=0)``).
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise BadInputError(f"fuse(step, k={k!r}): k is the number of steps per call, 1 or more")
    if kind not in ("train", "infer"):
        raise BadInputError(f"fuse(..., kind={kind!r}): kind is 'train' or 'infer'")

    def fused(state: Any, batches: Any) -> Any:
        import jax

        leading = {x.shape[0] if x.ndim else None for x in jax.tree.leaves(batches)}
        if leading != {k}:
            raise BadInputError(
                f"the fused step takes {k} batches stacked along a new leading axis, got "
                f"leading axes {sorted(leading, key=str)}: stack them with autoplace.stack"
            )
        if kind == "train":
            state, _ = jax.lax.scan(lambda s, batch: (step(s, batch), None), state, batches)
            return state
        _, outputs = jax.lax.scan(lambda s, batch: (s, step(s, batch)), state, batches)
        return outputs

    fused.__name__ = f"fused_{getattr(step, '__name__', 'step')}_{k}"
    fused.__doc__ = f"{k} steps of {getattr(step, '__name__', 'step')} in one call."
    return fused


def stack(batches: Sequence[Any]) -> Any:
    """Host batches of one structure stacked along a new leading axis (NumPy stays NumPy):
    the ``batches`` a fused step takes."""
    import jax
    import numpy as np

    if not batches:
        raise BadInputError("autoplace.stack([]): pass the K batches to run in one call")
    return jax.tree.map(lambda *xs: np.stack(xs), *batches)
