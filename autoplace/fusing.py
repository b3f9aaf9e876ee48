"""Steps per call: K steps of a workload inside one call, the fixed cost paid once.

A small jitted step pays a fixed cost per call (dispatch, argument handling, a launch on
an accelerator) that a small batch cannot amortise. Running K steps inside one call, a
``lax.scan`` over K batches stacked along a new leading axis, pays it once per K steps,
and the K batches cross to the device in one transfer. The arithmetic is the same, step
after step, so K fused steps leave exactly the state of K plain ones (Keras calls this
``steps_per_execution``).

:func:`fuse` turns a workload's ``step`` into the fused one; :func:`stack` stacks K host
batches (what ``make_batch`` returns) into the ``batches`` it takes. JAX is imported
when they are called, not with ``autoplace``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from autoplace.errors import BadInputError


def fuse(
    step: Callable[[Any, Any], Any], k: int, kind: Literal["train", "infer"] = "train"
) -> Callable[[Any, Any], Any]:
    """``fused(state, batches)``: ``k`` calls of ``step``, one after another, in one call.

    ``batches`` is the batch pytree with a leading axis of ``k`` (see :func:`stack`). For
    ``kind="train"`` (``step(state, batch)`` returns the next state) ``fused`` returns the
    state after the ``k`` steps; for ``kind="infer"`` (it returns predictions, the state
    unchanged) it returns the ``k`` predictions, stacked along a leading axis. Jit the
    result as you would the step (``jax.jit(fuse(step, 16), donate_argnums=0)``).
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
    """Host batches (pytrees of the same structure and shapes) stacked along a new leading
    axis: the ``batches`` a fused step takes. NumPy stays NumPy: nothing moves to a
    device."""
    import jax
    import numpy as np

    if not batches:
        raise BadInputError("autoplace.stack([]): pass the K batches to run in one call")
    return jax.tree.map(lambda *xs: np.stack(xs), *batches)
