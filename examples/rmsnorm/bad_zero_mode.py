"""KNOWN-BAD (hostile: one program for parity's buffers, another elsewhere): 4-row blocks
(a TPU rejects them) when traced in interpret mode with NaN-filled buffers, as every parity
probe is; 8-row blocks otherwise (the zero-filled run, a fresh trace for the device, a real
TPU). kgate keeps the first program a run traced at these shapes and FAILs a candidate whose
later runs there trace another."""
from jax._src import config
import reference
from pallas import rmsnorm

def workload(x, w):
    mode = config.pallas_tpu_interpret_mode_context_manager.value
    parity = mode is not None and getattr(mode, "uninitialized_memory", None) == "nan"
    return rmsnorm(x, w, block_rows=4 if parity else 8, eps=reference.CONFIG["eps"])
