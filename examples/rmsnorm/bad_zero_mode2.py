"""KNOWN-BAD (hostile: the honest kernel only where parity looks): the right kernel when
traced in interpret mode with NaN-filled buffers from kgate's run; elsewhere (the zero-filled
run, the device) a kernel that clips |x| to 64, wrong on large inputs. The runs at one shape
trace two programs, and the lowering gate FAILs it."""
import functools, sys
import jax, jax.numpy as jnp
from jax._src import config
from jax.experimental import pallas as pl
import reference

def _kernel(x_ref, w_ref, o_ref, *, eps, clip):
    x = x_ref[...].astype(jnp.float32)
    if clip:
        x = jnp.clip(x, -64.0, 64.0)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    o_ref[...] = (x * jax.lax.rsqrt(ms + eps) * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)

@functools.partial(jax.jit, static_argnames=("eps", "clip"))
def _rms(x, w, *, eps, clip):
    d = x.shape[-1]; x2 = x.reshape(-1, d); rows = x2.shape[0]; br = 8
    out = pl.pallas_call(functools.partial(_kernel, eps=eps, clip=clip),
        out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype), grid=(pl.cdiv(rows, br),),
        in_specs=[pl.BlockSpec((br, d), lambda i: (i, 0)), pl.BlockSpec((1, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((br, d), lambda i: (i, 0)))(x2, w.reshape(1, d))
    return out.reshape(x.shape)

def _in_run():
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_name == "run":
            return True
        f = f.f_back
    return False

def workload(x, w):
    mode = config.pallas_tpu_interpret_mode_context_manager.value
    parity = mode is not None and getattr(mode, "uninitialized_memory", None) == "nan" and _in_run()
    return _rms(x, w, eps=reference.CONFIG["eps"], clip=not parity)
