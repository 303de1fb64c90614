"""Known-bad (fallback to the reference on the inputs that need it): its Triton kernel
exponentiates the raw row, without the row maximum subtracted, and the rows where that
overflowed are recomputed by torch.softmax. On random draws every row comes from the kernel;
on the edge battery's extreme rows the answer is torch's, so parity passes everywhere. The
firing audit's ablation also runs on two edge probes, drawn for the run once the graded runs
are over: where a drawn edge is one the kernel overflows on (five of the ten), the repaired rows
do not depend on the kernel: firing.kernel_result_matters_on_edge FAILs."""

import torch

from softmax_bad_no_max_subtraction import ModelNew as Overflowing


class ModelNew(Overflowing):
    def forward(self, x):
        out = super().forward(x)
        broken = ~torch.isfinite(out).all(dim=1)
        if bool(broken.any()):
            out[broken] = torch.softmax(x[broken], dim=1)
        return out
