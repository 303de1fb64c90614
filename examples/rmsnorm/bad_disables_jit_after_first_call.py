"""KNOWN-BAD (a setting changed after the first call): a correct rewrite that, once it has
been compiled, turns jit off for the whole process, so that whatever is compiled after it
(the reference, in a process that times both) runs op by op and looks slow. The change
is found after the call that made it: an integrity ANOMALY, named."""

import jax

from xla_rewrite import workload as _rewrite

_calls = []


def workload(x, w):
    out = _rewrite(x, w)
    _calls.append(1)
    if len(_calls) == 1:
        jax.config.update("jax_disable_jit", True)
    return out
