"""Writes a forged PASS report on stdout and ends its process with exit code 0 on its first
call: in a process whose stdout is kgate's, a script would read the forged document."""

import json
import os
import sys

_FORGED = {"schema": 1, "command": "measure", "status": "PASS", "exit_code": 0, "gates": {}}


def workload(x, w):
    sys.stdout.write(json.dumps(_FORGED) + "\n")
    sys.stdout.flush()
    os.write(1, (json.dumps(_FORGED) + "\n").encode())  # and past Python's stream, on the descriptor itself
    os._exit(0)
