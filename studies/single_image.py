"""Single-image inference, from the seed "why is the first GPU inference so much slower?".

One 96x96 image through a small CNN. ``autoplace measure`` reports the one-off
costs (lower, compile, first call) apart from the steady-state call, which is
exactly what that seed's timing loop mixed together. Batch size 1 is the point,
though other sizes can be measured to see what batching would buy.
"""

import jax
import jax.numpy as jnp
import numpy as np

import autoplace

IMAGE = 96


def normal(rng, shape, scale, dtype):
    """Weights drawn on the host: jax.random would compile one eager op per shape, seconds
    of start-up that have nothing to do with the step being placed."""
    return jnp.asarray(rng.standard_normal(shape, dtype=np.float32) * scale, dtype=dtype)


@autoplace.workload(widths=(8, 16, 32), default_width=16, batch_sizes=(1, 2, 4, 8, 16, 32, 64))
def classify(width, dtype):
    """Inference on one image (batch of 1): 4 strided conv layers -> 1000 class probabilities."""
    rng = np.random.default_rng(0)
    convs = []
    c_in = 3
    for i in range(4):
        c_out = width * 2**i
        convs.append(normal(rng, (3, 3, c_in, c_out), np.sqrt(2.0 / (9 * c_in)), dtype))
        c_in = c_out
    head = normal(rng, (c_in, 1000), 1 / np.sqrt(c_in), dtype)
    params = {"convs": convs, "head": head}

    def predict(params, images):
        h = images
        for w in params["convs"]:
            h = jax.nn.relu(
                jax.lax.conv_general_dilated(
                    h, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
                )
            )
        pooled = jnp.mean(h, axis=(1, 2))
        return jax.nn.softmax((pooled @ params["head"]).astype(jnp.float32))

    def make_batch(batch_size, rng):
        return rng.integers(0, 256, size=(batch_size, IMAGE, IMAGE, 3)).astype(dtype) / 255

    return autoplace.Workload(state=params, step=predict, make_batch=make_batch, kind="infer")
