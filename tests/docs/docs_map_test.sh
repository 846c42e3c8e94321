#!/usr/bin/env bash
# docs/DESIGN.md stays a map that points at the real tree
# (tests/docs/check_docs_map.py says what is checked): the source tree
# passes, and a copy of its docs fails, naming the problem, on each of: a
# named file that no longer exists, a link to a missing file or heading, a
# design page DESIGN.md does not link, a design page naming no file, a
# README link that leads nowhere, a map over the line limit.
# Then: no source comment cites a numbered lab-diary entry ("session 35");
# comments cite the benchmark (its command, bench/RESULTS.md's section).
# Usage: docs_map_test.sh SOURCE_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
check=$src/tests/docs/check_docs_map.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 "$check" "$src"
echo "ok: the source tree's docs name only what exists"

# a tree whose docs are a copy and everything else the source's own.
fresh_tree() {
  rm -rf "$tmp/tree" && mkdir "$tmp/tree"
  for entry in "$src"/*; do
    [[ "$(basename "$entry")" == docs ]] || ln -s "$entry" "$tmp/tree/"
  done
  cp -r "$src/docs" "$tmp/tree/docs"
}
expect_rejected() {  # WHAT EXPECTED_MESSAGE (after the tree was broken)
  if out=$(python3 "$check" "$tmp/tree" 2>&1); then
    echo "FAIL: $1 was accepted"; exit 1
  fi
  grep -qF -- "$2" <<<"$out" || { echo "FAIL: $1: expected '$2' in: $out"; exit 1; }
  echo "ok: $1 is rejected"
}

fresh_tree
echo 'See `kvcache/no_such_file.h` for the details.' >> "$tmp/tree/docs/design/kv-tiers.md"
expect_rejected "a named file that does not exist" \
  "docs/design/kv-tiers.md:$(wc -l < "$tmp/tree/docs/design/kv-tiers.md"): names kvcache/no_such_file.h, which does not exist"

fresh_tree
echo 'The old notes: bench/kernels/gone_bench.cc.' >> "$tmp/tree/docs/design/cpu-kernels.md"
expect_rejected "a bare path that does not exist" "names bench/kernels/gone_bench.cc, which does not exist"

fresh_tree
echo 'More in [the old page](design/removed.md).' >> "$tmp/tree/docs/DESIGN.md"
expect_rejected "a link to a missing page" "link to design/removed.md: no such file"

fresh_tree
echo 'See [drain](cluster.md#no-such-heading).' >> "$tmp/tree/docs/design/routing.md"
expect_rejected "a link to a missing heading" "link to cluster.md#no-such-heading: no heading #no-such-heading"

fresh_tree
printf '# Orphan\n\nFiles: `kvcache/block_pool.h`.\n' > "$tmp/tree/docs/design/orphan.md"
expect_rejected "a page DESIGN.md does not link" "docs/design/orphan.md: not linked from docs/DESIGN.md"

fresh_tree
printf '# Vague\n\nNo files at all.\n' > "$tmp/tree/docs/design/vague.md"
echo '[vague](design/vague.md)' >> "$tmp/tree/docs/DESIGN.md"
expect_rejected "a page naming no file" "docs/design/vague.md: names no file of the tree"

fresh_tree
rm "$tmp/tree/README.md" && cp "$src/README.md" "$tmp/tree/README.md"
echo 'Who may reach which port: [docs/SECURITY.md](docs/SECURITY.md).' >> "$tmp/tree/README.md"
expect_rejected "a README link to a moved page" "README.md:$(wc -l < "$tmp/tree/README.md"): link to docs/SECURITY.md: no such file"

fresh_tree
for _ in $(seq 1 260); do echo >> "$tmp/tree/docs/DESIGN.md"; done
expect_rejected "a map over the line limit" "more than 250"

# comments cite benchmarks, not diary entries.
diary='\b[Ss]ession [0-9]+|\b[Rr]un [0-9]+ (measured|showed)|measured in run [0-9]+'
if hits=$(cd "$src" && grep -rnE "$diary" --include='*.h' --include='*.cc' --include='*.cmake' \
    --include='*.proto' --include='*.sh' --include='*.mjs' \
    bench cli common formats fuzz generation kernels kvcache planner proto router scripts server text); then
  echo "FAIL: comments cite numbered diary entries; cite the benchmark instead:"
  echo "$hits"
  exit 1
fi
echo "ok: no comment cites a numbered diary entry"
