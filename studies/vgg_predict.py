"""A small VGG-style CNN used for prediction only, from the seed about VGG on a Jetson TK1.

Conv 3x3 blocks with max-pooling, then a dense classifier, on 64x64 RGB images.
``width`` is the channel count of the first block (it doubles each block).
"""

import jax
import jax.numpy as jnp
import numpy as np

import autoplace

IMAGE = 64
BLOCKS = 3


def normal(rng, shape, scale, dtype):
    """Weights drawn on the host: jax.random would compile one eager op per shape, seconds
    of start-up that have nothing to do with the step being placed."""
    return jnp.asarray(rng.standard_normal(shape, dtype=np.float32) * scale, dtype=dtype)


@autoplace.workload(
    widths=(8, 16, 32, 64), default_width=16, batch_sizes=(1, 2, 4, 8, 16, 32, 64, 128, 256)
)
def vgg(width, dtype):
    """Inference: images -> class probabilities."""
    rng = np.random.default_rng(0)
    params = {"convs": [], "dense": None}
    c_in = 3
    for i in range(BLOCKS):
        c_out = width * 2**i
        for _ in range(2):
            w = normal(rng, (3, 3, c_in, c_out), np.sqrt(2.0 / (9 * c_in)), dtype)
            params["convs"].append((w, jnp.zeros((c_out,), dtype)))
            c_in = c_out
    side = IMAGE // 2**BLOCKS
    flat = side * side * c_in
    params["dense"] = (normal(rng, (flat, 10), 1 / np.sqrt(flat), dtype), jnp.zeros((10,), dtype))

    def predict(params, images):
        h = images
        for i, (w, b) in enumerate(params["convs"]):
            h = jax.lax.conv_general_dilated(
                h, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
            )
            h = jax.nn.relu(h + b)
            if i % 2 == 1:
                h = jax.lax.reduce_window(
                    h, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"
                )
        w, b = params["dense"]
        return jax.nn.softmax((h.reshape(h.shape[0], -1) @ w + b).astype(jnp.float32))

    def make_batch(batch_size, rng):
        return rng.random((batch_size, IMAGE, IMAGE, 3), dtype=np.float32).astype(dtype)

    return autoplace.Workload(state=params, step=predict, make_batch=make_batch, kind="infer")
