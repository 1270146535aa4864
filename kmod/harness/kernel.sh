#!/usr/bin/env bash
# kmod/harness/kernel.sh - fetch Debian's packaged kernel and its headers
# into build/kernel (ignored by git) without installing anything, so that
# det's module can be built against them and tested by booting them in qemu.
#
# Rules: the image and headers come from the same ABI package pair (the one
# linux-image-amd64 points at today, or $DET_KERNEL_ABI, e.g. 6.1.0-56),
# else insmod says "invalid module format". Idempotent: a complete unpack
# (marked by build/kernel/.ready) is reused. Prints the ABI on stdout.
# Needs apt-get and dpkg (Debian); run as any user.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/kernel

abi=${DET_KERNEL_ABI:-}
if [ -z "$abi" ] && [ -f $out/.ready ]; then
  abi=$(cat $out/.ready)
fi
if [ -z "$abi" ]; then
  abi=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/.*Depends: linux-image-\(.*\)-amd64$/\1/p' | head -1)
  [ -n "$abi" ] || { echo "kernel.sh: apt-cache does not know linux-image-amd64 (run apt-get update)" >&2; exit 1; }
fi
if [ -f $out/.ready ] && [ "$(cat $out/.ready)" = "$abi" ]; then
  echo "$abi"
  exit 0
fi

rm -rf $out
mkdir -p $out/deb $out/root
kver=${abi%-*}          # 6.1.0-56 -> 6.1.0
kbuild=linux-kbuild-${kver%.*}  # -> linux-kbuild-6.1
(cd $out/deb && apt-get download -q "linux-image-$abi-amd64" "linux-headers-$abi-amd64" \
   "linux-headers-$abi-common" "$kbuild" >/dev/null 2>&1) || {
  echo "kernel.sh: apt-get download of linux-image-$abi-amd64 and its headers failed (network? apt-get update?)" >&2
  exit 1
}
for f in $out/deb/*.deb; do dpkg -x "$f" $out/root; done
rm -rf $out/deb
hdr=$out/root/usr/src/linux-headers-$abi-amd64
common=$(cd $out/root/usr/src/linux-headers-$abi-common && pwd)
# the one absolute path in the arch headers: point it at the unpacked copy
sed -i "s|^include /usr/src/linux-headers-$abi-common/Makefile|include $common/Makefile|" $hdr/Makefile
grep -q "^include $common/Makefile" $hdr/Makefile || { echo "kernel.sh: unexpected $hdr/Makefile" >&2; exit 1; }
echo "$abi" > $out/.ready
echo "$abi"
