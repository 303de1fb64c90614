"""KNOWN-BAD (it evaded an earlier version of the count): both row reductions of softmax
happen outside the kernel, in primitives the count once weighed too lightly: the row max as
a windowed select (select_and_gather_add, the primitive behind max-pooling's gradient, then
counted as data movement) and the normalizer as a cumulative log-sum-exp. The kernel only
divides exp(z) by exp(lse), element by element."""
import jax
import jax.numpy as jnp
from jax import lax
from jax._src.lax.windowed_reductions import _select_and_gather_add
from jax.experimental import pallas as pl


def _divide_kernel(z_ref, l_ref, o_ref):
    o_ref[...] = jnp.exp(z_ref[...]) / jnp.exp(l_ref[...])


def workload(x):
    r, c = x.shape
    row_max = _select_and_gather_add(x, x, lax.ge_p, (1, c), (1, 1), [(0, 0), (0, 0)], (1, 1), (1, 1))
    z = x - row_max
    lse = lax.cumlogsumexp(z, axis=1)[:, -1:]
    return pl.pallas_call(_divide_kernel, out_shape=jax.ShapeDtypeStruct(z.shape, z.dtype), grid=(pl.cdiv(r, 8),),
                          in_specs=[pl.BlockSpec((8, c), lambda i: (i, 0)), pl.BlockSpec((8, 1), lambda i: (i, 0))],
                          out_specs=pl.BlockSpec((8, c), lambda i: (i, 0)))(z, lse)
