#!/usr/bin/env bash
# tandem_gpu_check oracle against a copy of the stories260K oracle with one
# completion token changed: it must exit 1 and report that prompt inexact.
#   oracle_mismatch_test.sh TANDEM_GPU_CHECK REPO_ROOT
set -euo pipefail
check=$1 root=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# the second case's fourth completion token + 1 (the file's ids, one per line)
awk '/"completion_ids"/ { n++; k = 0 } n == 2 && /^ *[0-9]+,?$/ && ++k == 4 && !done { sub(/[0-9]+/, $1 + 1); done = 1 } { print }' \
  "$root/models/stories260K/greedy_oracle.json" > "$work/oracle.json"
if cmp -s "$root/models/stories260K/greedy_oracle.json" "$work/oracle.json"; then
  echo "FAILED: the altered oracle equals the original"; exit 1
fi
rc=0
"$check" oracle --prompts 2 --tokens 6 --oracle "$work/oracle.json" --out "$work/report.json" > /dev/null || rc=$?
if [[ $rc -ne 1 ]]; then echo "FAILED: exit $rc, want 1"; exit 1; fi
python3 -c "
import json, sys
r = json.load(open('$work/report.json'))
exact = [p['exact'] for p in r['prompts']]
sys.exit(0 if exact == [True, False] and not r['pass'] else 1)" || { echo "FAILED: report"; cat "$work/report.json"; exit 1; }
echo "ok: the changed token fails the oracle check"
