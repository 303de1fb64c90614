"""A pool's worker: runs one suite row (`python -m kgate.suite.worker`, the row on stdin as JSON)
and ends with its outcome on one marked stdout line; progress goes to stderr. It writes nothing
else: the suite's own process keeps the results. Like any grading parent it never imports
candidate code (the legs it starts do)."""

from __future__ import annotations

import json
import os
import sys

from kgate.suite.executors import OUTCOME_MARK
from kgate.suite.run import entry_from_json, request_from_json, run_row
from kgate.verify.lock import VISIBLE_ENVS


def main() -> int:
    spec = json.loads(sys.stdin.read())
    chips = {name: os.environ[name] for name in VISIBLE_ENVS if os.environ.get(name, "").strip()}
    outcome = run_row(entry_from_json(spec["entry"]), str(spec["key"]), request_from_json(spec["request"]),
                      lambda line: print(line, file=sys.stderr, flush=True),
                      {"executor": "local", "chips": chips} if chips else None)  # the chip its slot pinned it to
    print(OUTCOME_MARK + json.dumps(outcome.to_json()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
