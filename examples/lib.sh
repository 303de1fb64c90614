# Helpers shared by the demo scripts: print each kgate command as typed, run it, check its exit code.

KGATE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.venv/bin/kgate"

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
