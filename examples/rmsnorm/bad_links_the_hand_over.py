"""KNOWN-BAD (writing through kgate's hands): at import, the candidate puts a symbolic link
at every name kgate is about to write in the probe folders (the lists of probes, the shape
probes' input files), each pointing at a file of the candidate's choosing (here a canary,
`kgate-link-canary.txt` in the temporary folder), so that kgate's own write lands there: a
file anywhere the user can write, overwritten with kgate's bytes. kgate writes each file
fresh under another name and renames it into place: the links are replaced, never followed,
and the canary keeps its text. The kernel itself is the honest one."""

import gc
import os
import tempfile
from pathlib import Path

from xla_rewrite import workload  # noqa: F401  (the honest kernel)

CANARY = Path(tempfile.gettempdir()) / "kgate-link-canary.txt"


def _plant() -> None:
    CANARY.write_text("untouched")
    folder = next((Path(o["probes_file"]).parent for o in gc.get_objects()
                   if isinstance(o, dict) and isinstance(o.get("probes_file"), str)), None)
    if folder is None:
        return
    names = {folder: ["probes.json", "probes-shapes.json"],
             folder.parent / "reference": ["inputs.json", "inputs-shapes.json",
                                           *(f"inputs-p{n}.pkl" for n in range(8, 20))]}
    planted = []
    for where, files in names.items():
        for name in files:
            try:
                if not (where / name).exists():
                    os.symlink(CANARY, where / name)
                    planted.append(name)
            except OSError:
                pass
    CANARY.with_suffix(".planted").write_text("\n".join(planted))


_plant()
