#!/usr/bin/env bash
# The experiment record on the bundled RMSNorm problem, in a fresh git repository made in a
# temp dir: workspace, family, stub (pre-registration), brief, three candidates (one fails
# parity), the ledger. Every command's exit code is checked.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/lib.sh"
EX="$HERE/rmsnorm"
temp_workspace kgate-records

new_repo "$WORK" "$EX/reference.py"
WT=kernel_experiments/rmsnorm/.repo

echo "== A workspace and a family (the reference pinned by sha256)"
run 0 init
run 0 family new rmsnorm --reference ops/reference.py --target ops/rmsnorm.py
echo
echo "== The pre-registration: committed before any candidate exists"
run 0 stub rmsnorm --bar "p50 beats naive by >2% AND 3σ" \
  --diagnosis "The reference makes two passes over each row: one for the mean square, one to scale." \
  --reading "Pallas TPU: pipelining" \
  --hypothesis "One pass over each row halves the memory traffic." \
  --mechanism "Fuse the sum of squares and the scaling in one Pallas kernel, one row block per grid step." \
  --predicted "p50 1.3x faster than the reference at the op-point." \
  --criterion "The speedup interval lies below 1.02 at the op-point." \
  --plan "cand1: jnp rewrite in float32 — predict 1.05x" \
  --plan "cand2: Pallas kernel with a padding mask — predict 1.2x" \
  --plan "cand3: Pallas kernel, one row block per step — predict 1.3x"
echo
echo "== The author's brief, from the records"
run 0 brief rmsnorm
run 0 ledger rmsnorm --loaded "Pallas TPU: pipelining"
echo
echo "== Three candidates, each measured, then committed with its ledger row"
cp "$EX/xla_rewrite.py" "$WT/ops/rmsnorm.py"
(cd "$WT/ops" && quiet gate -r reference.py -c rmsnorm.py --class xla-rewrite -o "$WORK/cand1.json")
run 0 cand rmsnorm cand1 --class xla-rewrite --receipt "$WORK/cand1.json" --why "kept: the baseline to beat"
cp "$EX/bad_nan_boundary.py" "$WT/ops/rmsnorm.py"
(cd "$WT/ops" && quiet gate -r reference.py -c rmsnorm.py -o "$WORK/cand2.json")
run 0 cand rmsnorm cand2 --receipt "$WORK/cand2.json"
cp "$EX/pallas.py" "$WT/ops/rmsnorm.py"
(cd "$WT/ops" && quiet measure -r reference.py -c rmsnorm.py --set seq_len=64 -o "$WORK/cand3.json")
run 0 cand rmsnorm cand3 --receipt "$WORK/cand3.json" --why "kept: correct and firing"
echo
echo "== The ledger and the branch history"
run 0 ledger rmsnorm
echo "\$ git -C $WT log --format=%s main.."
git -C "$WT" log --format=%s main..
echo
echo "== A compile error, matched against the gotcha table (a block off the TPU's (8, 128) tiling)"
(cd "$EX" && SUFFIX="  # its JSON report, matched by kgate gotcha" show lower -r reference.py -c bad_block_off_tpu_tiling.py --json)
(cd "$EX" && "$KGATE" lower -r reference.py -c bad_block_off_tpu_tiling.py --json > "$WORK/lower.json" 2>/dev/null)
run 0 gotcha "$WORK/lower.json"
echo
echo "== Refused, and nothing changed: a candidate outside the plan without --reason"
echo "# another idea" >> "$WT/ops/rmsnorm.py"
run 2 cand rmsnorm cand4 --what "another idea" --why "kept: worth a look"
