"""Known-bad (hostile): `softmax_bad_repairs_with_torch.py`, which also plants an empty draw where
kgate's leg would read which edges the firing audit runs on (its folder found through its own
stderr), at import and on every call, so no edge would be audited. The leg removes whatever lies
there before it seals the end of its graded runs, and reads the parent's draw at once; the
parent holds what the leg audited to what it drew: firing.kernel_result_matters_on_edge FAILs
as it does without the plant."""

import os

from softmax_bad_repairs_with_torch import ModelNew as Repairing


def _plant():
    try:
        folder = os.path.dirname(os.readlink("/proc/self/fd/2"))
        with open(os.path.join(folder, "audited-edges.json"), "w") as f:
            f.write("[]")
    except OSError:
        pass


_plant()


class ModelNew(Repairing):
    def forward(self, x):
        _plant()
        return super().forward(x)
