"""RMSNorm as a Pallas TPU kernel with two tile knobs, for `kgate sweep`.

`block_rows` rows per grid step, normalized `sub_rows` rows at a time (to keep fewer rows
live at once). The inner loop runs `block_rows // sub_rows` times, so a `sub_rows` that
does not divide `block_rows` leaves the last rows of every block unwritten: wrong at those
points of a sweep, and only there. A `block_rows` under 8 breaks the TPU's (8, 128) tiling:
such a point interprets right but lowers nowhere. A sweep must say both, and time neither.

    kgate sweep -r rmsnorm/reference.py -c rmsnorm/pallas_tiles.py \\
        --grid block_rows=4,16,32 --grid sub_rows=16,12
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import reference


def rmsnorm_kernel(x_ref, w_ref, o_ref, *, eps, sub_rows):
    w = w_ref[...].astype(jnp.float32)
    sub = min(sub_rows, x_ref.shape[0])
    for j in range(x_ref.shape[0] // sub):  # whole sub-blocks only: a remainder is never written
        x = x_ref[j * sub:(j + 1) * sub, :].astype(jnp.float32)
        ms = jnp.mean(x * x, axis=-1, keepdims=True)
        o_ref[j * sub:(j + 1) * sub, :] = (x * jax.lax.rsqrt(ms + eps) * w).astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("block_rows", "sub_rows", "eps"))
def rmsnorm(x, w, *, block_rows=16, sub_rows=16, eps=1e-6):
    d = x.shape[-1]
    x2 = x.reshape(-1, d)
    out = pl.pallas_call(
        functools.partial(rmsnorm_kernel, eps=eps, sub_rows=sub_rows),
        out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype),
        grid=(pl.cdiv(x2.shape[0], block_rows),),
        in_specs=[
            pl.BlockSpec((block_rows, d), lambda i: (i, 0)),
            pl.BlockSpec((1, d), lambda i: (0, 0)),
        ],
        out_specs=pl.BlockSpec((block_rows, d), lambda i: (i, 0)),
    )(x2, w.reshape(1, d))
    return out.reshape(x.shape)


def workload(x, w, *, block_rows=16, sub_rows=16):
    return rmsnorm(x, w, block_rows=block_rows, sub_rows=sub_rows, eps=reference.CONFIG["eps"])
