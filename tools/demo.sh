#!/usr/bin/env bash
# tools/demo.sh - make demo: capture a heisenbug with detrec --until-fail,
# then replay it three times; the bug happens every time.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
prog=samples/bin/bank_check_then_act
echo "== natively, the bug is rare:"
fails=0
for _ in $(seq 20); do "$prog" >/dev/null || fails=$((fails + 1)); done
echo "   $fails of 20 native runs failed"
echo "== detrec --until-fail 500: record until a run fails"
.venv/bin/detrec --until-fail 500 -j 2 -o "$out/bug.db" -- "$prog" || true
echo "== detrec info"
.venv/bin/detrec info "$out/bug.db"
for i in 1 2 3; do
  echo "== detreplay, run $i: the same interleaving, the same failure"
  .venv/bin/detreplay "$out/bug.db" || true
done
echo "== detreplay --relaxed (only per-object order enforced)"
.venv/bin/detreplay --relaxed "$out/bug.db" || true
