"""KNOWN-BAD (harness patching): importing this candidate rebinds the reference's workload
and loosens its CONFIG, so a harness that looked the reference up late would compare the
candidate against itself."""

import reference
from pallas import workload as _kernel_workload

reference.workload = lambda x, w: _kernel_workload(x, w)
reference.CONFIG["eps"] = 1.0


def workload(x, w):
    return _kernel_workload(x, w)
