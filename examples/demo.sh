#!/usr/bin/env bash
# `make demo`: the early-kill gate, parity and the lowering gate on the bundled RMSNorm problem, for a
# correct Pallas kernel and for known-bad ones. Expected exit codes are checked.
set -uo pipefail
cd "$(dirname "$0")/rmsnorm"
KGATE=../../.venv/bin/kgate

run() {  # run EXPECTED_EXIT CMD...
  local expected=$1; shift
  echo
  echo "\$ kgate ${*}"
  "$KGATE" "$@"
  local rc=$?
  echo "(exit code $rc)"
  if [ "$rc" -ne "$expected" ]; then
    echo "demo: expected exit code $expected, got $rc" >&2
    exit 1
  fi
}

echo "== A correct Pallas kernel: early-kill gate (TINY op-point, interpret mode)"
run 0 gate --reference reference.py --candidate pallas.py
echo
echo "== The same kernel: parity at a larger op-point"
run 0 parity --reference reference.py --candidate pallas.py --set seq_len=64
echo
echo "== A known-bad candidate: the kernel runs but its result is discarded (ghost kernel)"
run 2 gate --reference reference.py --candidate bad_ghost.py
echo
echo "== A known-bad candidate: the grid covers half the rows (partial work)"
run 2 gate --reference reference.py --candidate bad_partial.py
echo
echo "== A known-bad candidate: right at TINY's tile-multiple sizes, a partial last block dropped elsewhere"
run 2 gate --reference reference.py --candidate bad_floor_grid.py
echo
echo "== A kernel a TPU would refuse: its grid leaves rows unwritten at the op-point (lowered from shapes, nothing runs)"
run 2 lower --reference reference.py --candidate bad_floor_grid_at_op_point.py
echo
echo "== Which block sizes a TPU v4 would accept (the compile-only envelope)"
run 1 fit --reference reference.py --candidate pallas.py --grid block_rows=4,8,24,2048 --chip-kind v4
