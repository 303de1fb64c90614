# Helpers shared by the demo scripts: print each kgate command as typed, run it, check its exit code.

KGATE="${KGATE:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.venv/bin/kgate}"
export KGATE

temp_workspace() {  # temp_workspace PREFIX: sets WORK to a new temp folder, removed when the demo exits
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")"
  trap 'rm -rf "$WORK"' EXIT
}

show() {  # the command line as typed, arguments with spaces quoted
  local out="\$ kgate" arg
  for arg in "$@"; do
    if [[ "$arg" =~ [[:space:]\|\>\<\;\&] ]]; then out+=" '$arg'"; else out+=" $arg"; fi
  done
  echo "$out${SUFFIX:-}"
}

run() {  # run EXPECTED_EXIT CMD...
  local expected=$1; shift
  show "$@"
  "$KGATE" "$@"
  local rc=$?
  if [ "$rc" -ne "$expected" ]; then
    echo "demo: expected exit code $expected, got $rc from: kgate $*" >&2
    exit 1
  fi
}

quiet() {  # a kgate run whose report is only wanted as a file
  SUFFIX="  # report to the file" show "$@"
  "$KGATE" "$@" > /dev/null 2>&1
}

new_repo() {  # new_repo DIR REFERENCE: a git repo holding REFERENCE at ops/reference.py
  mkdir -p "$1/ops" && cd "$1" || exit 1
  git init -q -b main && git config user.email demo@example.invalid && git config user.name demo
  cp "$2" ops/reference.py && git add -A && git commit -qm "reference"
}

status_says() {  # status_says STAGE NEXT_PREFIX: kgate status names this stage and next command, or the demo stops
  show status
  "$KGATE" status
  "$(dirname "$KGATE")/python" -c '
import json, os, subprocess, sys
family = json.loads(subprocess.run([os.environ["KGATE"], "status", "--json"], capture_output=True, text=True).stdout)["families"][0]
sys.exit(0 if family["stage"] == sys.argv[1] and family["next"].startswith(sys.argv[2]) else 1)' "$1" "$2" \
    || { echo "demo: kgate status did not name stage $1 with next: $2" >&2; exit 1; }
}
