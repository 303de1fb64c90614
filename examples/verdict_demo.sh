#!/usr/bin/env bash
# From stub to verdict on the bundled cumsum problem (an O(n^2) triangular-matmul scan), in a
# fresh git repository made in a temp dir: pre-registration, a wrong candidate, a correct one,
# full verification, lint, the verdict derived from the receipt, the author's report.
# Every command's exit code is checked.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/lib.sh"
EX="$HERE/cumsum"
temp_workspace kgate-verdict

new_repo "$WORK" "$EX/reference.py"
WT=kernel_experiments/cumsum/.repo
OP=(--set n=1024 --set batch=16)
BAR="speedup > 1.3x"

echo "== Workspace, family (op-point n=1024, batch=16), pre-registration; kgate status says what is next"
status_says workspace "kgate init"
run 0 init
status_says family "kgate family new"
run 0 family new cumsum --reference ops/reference.py --target ops/cumsum.py "${OP[@]}"
status_says stub "kgate stub cumsum"
run 0 stub cumsum --class xla-rewrite --bar "$BAR" \
  --diagnosis "The reference computes a prefix sum as a matmul with a triangular matrix: O(n^2) work for an O(n) scan." \
  --reading "jax.numpy.cumsum" \
  --hypothesis "A scan does n times less work than the triangular matmul, so it is faster at n=1024." \
  --mechanism "Replace the matmul by jnp.cumsum in float32, then round to bf16 like the reference." \
  --predicted "At least 2x faster than the reference at n=1024, batch=16." \
  --criterion "The 95% speedup interval lies below 1.3x." \
  --plan "cand1: cumsum minus the element (exclusive) — predict 3x" \
  --plan "cand2: jnp.cumsum, inclusive — predict 3x"
status_says loaded "kgate ledger cumsum --loaded jax.numpy.cumsum"
run 0 ledger cumsum --loaded "jax.numpy.cumsum"
status_says candidates "kgate gate --family cumsum -o cand1.json"
echo
echo "== cand1 is fast and wrong: parity fails, the row says so"
cp "$EX/bad_exclusive.py" "$WT/ops/cumsum.py"
(cd "$WT/ops" && quiet gate -r reference.py -c cumsum.py --class xla-rewrite -o "$WORK/cand1.json")
run 0 cand cumsum cand1 --receipt "$WORK/cand1.json"
status_says candidates "kgate gate --family cumsum -o cand2.json"
echo
echo "== cand2: full verification at the family's op-point, against the registered bar"
cp "$EX/xla_rewrite.py" "$WT/ops/cumsum.py"
(cd "$WT/ops" && quiet verify --mode full -r reference.py -c cumsum.py --class xla-rewrite --bar "$BAR" "${OP[@]}" \
  --budget 3 --receipt "$WORK/cand2-full.json" --lock-dir "$WORK")
run 0 cand cumsum cand2 --receipt "$WORK/cand2-full.json" --why "kept: the final candidate"
status_says verdict "kgate verdict cumsum v001 --verify"
echo
echo "== Lint, then the verdict: derived from the receipt, never typed in"
run 0 lint cumsum
run 0 verdict cumsum v001 --receipt "$WORK/cand2-full.json"
run 0 lint cumsum
status_says report "kgate report cumsum v001"
echo "\$ cat kernel_experiments/cumsum/RESULTS.tsv"
cat kernel_experiments/cumsum/RESULTS.tsv
echo "\$ git -C $WT log --format=%s main.."
git -C "$WT" log --format=%s main..
echo
echo "== The author's report (Markdown on stdout; --html writes a page with plots)"
run 0 report cumsum v001 --html "$WORK/report.html"
echo
echo "== A filed page is final: an edit afterwards makes the record invalid"
echo "edited" >> "$WT/kernel_experiments/cumsum/"*-v001-cumsum.md
run 2 lint cumsum
