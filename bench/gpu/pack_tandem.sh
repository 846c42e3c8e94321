#!/usr/bin/env bash
# Packs a built `tandem` (e.g. -DTANDEM_CUDA=ON) with the shared libraries it
# loads, for a GPU machine that has none of Debian's packages: the binary
# stripped, its `ldd` libraries beside it in lib/ (minus the C runtime the
# machine has: libc, libm, libstdc++, libgcc_s, the loader), all in one
# xz-compressed tar (about 18 MB; ICU's data is most of it). There:
#   tar xJf tandem.tar.xz -C DIR && LD_LIBRARY_PATH=DIR/lib DIR/tandem ...
#   bench/gpu/pack_tandem.sh BUILD_DIR OUT.tar.xz
set -euo pipefail
build=$1 out=$2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib"
cp "$build/tandem" "$stage/tandem"
strip "$stage/tandem"
ldd "$build/tandem" | awk '/=> \// {print $3}' | while read -r lib; do
  case $(basename "$lib") in
    libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|ld-linux*|libdl.so*|libpthread.so*|librt.so*) ;;
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done
tar cJf "$out" -C "$stage" .
echo "pack_tandem: $out ($(du -h "$out" | cut -f1), $(ls "$stage/lib" | wc -l) libraries)"
