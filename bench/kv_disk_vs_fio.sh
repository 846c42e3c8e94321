#!/usr/bin/env bash
# G3 disk tier bandwidth against fio on the same file system, with the same
# I/O size and queue depth, in the same run.
#
# For each block size: REPEATS rounds of (1) bench/kv_disk/kv_disk_bench:
# a fresh FILE_BYTES DiskTier file filled through store() (sequential slots),
# then every block read back through load() in random order, O_DIRECT,
# QD in flight; (2) fio --ioengine=io_uring --direct=1 --fixedbufs
# --registerfiles: rw=write on a fresh FILE_BYTES file, then rw=randread of it,
# bs = the tier's record size (the block + its 4 KiB header, 4 KiB-padded:
# the same I/Os the disk sees), iodepth QD. Medians of the rounds; ratio =
# tandem / fio (goal >= 0.9). MB/s = 1e6 B/s of records; the payload MB/s
# (KV bytes) is the record MB/s x block/record.
#
#   bench/kv_disk_vs_fio.sh KV_DISK_BENCH [DIR]
#
# DIR: where both files go (default /var/tmp/tandem-kv-disk-bench); it must be
# on a real disk: tmpfs/ramfs measure memory (refused unless SMOKE=1).
# Environment: FILE_BYTES (2G), BLOCKS (bytes, "1179648 65536": a stories110M
# block, 12 layers x 2 x 16 tokens x 768 x 4 B, and a 64 KiB small-model
# block), QD (32), IO (uring|threads, uring), REPEATS (3), OUT_DIR.
# SMOKE=1: a 64 MiB file, 1 round, one 64 KiB block size; fio skipped when not
# installed ("skipped: fio not found").
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,24p' "$0" >&2; exit 2; fi
bench=$(realpath "$1")
out=${OUT_DIR:-$(mktemp -d)}
mkdir -p "$out"
if [[ "${SMOKE:-0}" == 1 ]]; then
  def_dir=$out/data def_file=64M def_blocks=65536 def_repeats=1
else
  def_dir=/var/tmp/tandem-kv-disk-bench def_file=2G def_blocks="1179648 65536" def_repeats=3
fi
dir=${2:-$def_dir}
file_bytes=${FILE_BYTES:-$def_file} blocks=${BLOCKS:-$def_blocks}
qd=${QD:-32} io=${IO:-uring} repeats=${REPEATS:-$def_repeats}
mkdir -p "$dir"
fs=$(findmnt -n -o FSTYPE -T "$dir") dev=$(findmnt -n -o SOURCE -T "$dir")
if [[ "$fs" == tmpfs || "$fs" == ramfs ]] && [[ "${SMOKE:-0}" != 1 ]]; then
  echo "refusing: $dir is on $fs (the page cache, not a disk); give a DIR on a real disk" >&2
  exit 1
fi
have_fio=1
command -v fio >/dev/null 2>&1 || { have_fio=0; echo "skipped: fio not found (tandem side only)"; }
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cpus"
echo "dir: $dir ($fs on $dev), file $file_bytes, queue depth $qd, io $io, $repeats rounds"

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }
fio_mbps() {  # rw, bs, json file -> MB/s
  fio --name=kv --filename="$dir/fio.dat" --size="$file_bytes" --bs="$2" --iodepth="$qd" \
    --ioengine=io_uring --direct=1 --fixedbufs=1 --registerfiles=1 --rw="$1" \
    --output-format=json --output="$3" >/dev/null
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]; print("%.1f" % ((j["write"]["bw_bytes"] + j["read"]["bw_bytes"]) / 1e6))' "$3"
}

rows=()
for bs in $blocks; do
  record=$((4096 + (bs + 4095) / 4096 * 4096))
  : >"$out/tw.$bs" >"$out/tr.$bs" >"$out/fw.$bs" >"$out/fr.$bs"
  for round in $(seq 1 "$repeats"); do
    line=$("$bench" "$dir/g3" "$file_bytes" "$bs" "$qd" "$io" 2>"$out/bench.$bs.$round.log")
    echo "round $round block $bs tandem: $line"
    mode=$(echo "$line" | field io)
    echo "$line" | field write_MBps >>"$out/tw.$bs"
    echo "$line" | field read_MBps >>"$out/tr.$bs"
    if ((have_fio)); then
      rm -f "$dir/fio.dat"
      fw=$(fio_mbps write "$record" "$out/fio-w.$bs.$round.json")
      fr=$(fio_mbps randread "$record" "$out/fio-r.$bs.$round.json")
      echo "round $round block $bs fio: write_MBps=$fw read_MBps=$fr"
      echo "$fw" >>"$out/fw.$bs"
      echo "$fr" >>"$out/fr.$bs"
    fi
  done
  tw=$(median <"$out/tw.$bs") tr=$(median <"$out/tr.$bs")
  if ((have_fio)); then
    fw=$(median <"$out/fw.$bs") fr=$(median <"$out/fr.$bs")
    rw=$(awk -v a="$tw" -v b="$fw" 'BEGIN { printf "%.2f", a / b }')
    rr=$(awk -v a="$tr" -v b="$fr" 'BEGIN { printf "%.2f", a / b }')
  else
    fw=- fr=- rw=- rr=-
  fi
  rows+=("| $bs | $record | $qd | $mode | $tw | $fw | $rw | $tr | $fr | $rr |")
done
rm -rf "$dir/g3" "$dir/fio.dat"

echo
echo "| block B | record B | QD | tandem io | tandem write MB/s | fio write MB/s | ratio | tandem read MB/s | fio randread MB/s | ratio |"
echo "|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
