#!/usr/bin/env bash
# make mutation: each planted bug, built in behind its tag, must be caught. A simulator
# mutation (tag:sim:seeds:check) must make narad-sim print "verdict=violation
# check=<check>" within its seeds; a unit mutation (tag:package:test, after --unit) must
# make its test fail. MUTATION_JOBS (default 2) run at once; any one not caught, caught
# by another check, or failing to build fails the whole.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
BIN=${BIN:-bin}

sim_one() {
  local tag=${1%%:*} rest=${1#*:}
  local sim=${rest%%:*}; rest=${rest#*:}
  local n=${rest%%:*} check=${rest#*:}
  local out=$BIN/mutation-$tag.out seeds
  "$GO" build -tags "$tag" -o "$BIN/narad-sim-$tag" ./cmd/narad-sim || { echo "mutation $tag: build failed"; return 1; }
  case $n in *-*) seeds=$n;; *) seeds=1-$n;; esac
  "./$BIN/narad-sim-$tag" -sim "$sim" -seeds "$seeds" -stop > "$out" 2>&1
  local code=$?
  if [ $code -eq 0 ]; then echo "mutation $tag: NOT caught by -sim $sim in seeds $seeds"; return 1; fi
  if [ $code -ne 1 ]; then echo "mutation $tag: narad-sim failed (exit $code), not a verdict:"; tail -n 20 "$out"; return 1; fi
  local hit
  hit=$(grep -m 1 "verdict=violation check=$check\$" "$out")
  if [ -z "$hit" ]; then echo "mutation $tag: caught, but not by $check:"; grep "verdict=violation" "$out" | head -n 3; return 1; fi
  echo "mutation $tag ($sim, $check): caught: $hit"
}

unit_one() {
  local tag=${1%%:*} rest=${1#*:}
  local pkg=${rest%%:*} test=${rest#*:}
  local out=$BIN/mutation-$tag.out
  if "$GO" test -count=1 -tags "$tag" -run "^$test\$" "$pkg" > "$out" 2>&1; then
    echo "mutation $tag: NOT caught by $test"; return 1
  fi
  if ! grep -q -- "--- FAIL: $test" "$out"; then echo "mutation $tag: no verdict from $test:"; tail -n 20 "$out"; return 1; fi
  echo "mutation $tag (unit): caught by $test"
}

if [ "${1:-}" = --one ]; then
  kind=$2; shift 2
  "${kind}_one" "$1"
  exit $?
fi

mkdir -p "$BIN"
jobs=()
kind=sim
for m in "$@"; do
  if [ "$m" = --unit ]; then kind=unit; continue; fi
  jobs+=("$kind $m")
done
printf '%s\n' "${jobs[@]}" |
  GO="$GO" BIN="$BIN" xargs -P "${MUTATION_JOBS:-2}" -L 1 "$0" --one
status=$?
if [ $status -ne 0 ]; then echo "mutation: a planted bug was not caught as it must be (above)"; exit 1; fi
echo "mutation: all ${#jobs[@]} planted bugs caught"
