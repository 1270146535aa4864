#!/usr/bin/env bash
# tools/package.sh - make package: this tree's Debian package, built by
# dpkg-buildpackage in a copy (build/deb/det-VERSION, so the checkout's own
# build/ is left alone), then checked by lintian (no error, no warning).
#
# Prints the path of the .deb last. Rules: the copy is exactly the files git
# knows or would add (tracked, plus untracked ones not ignored).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in dpkg-buildpackage dh lintian dpkg-parsechangelog; do
  command -v "$tool" >/dev/null || { echo "package: $tool is missing: run tools/setup.sh --package as root" >&2; exit 1; }
done
version=$(dpkg-parsechangelog -S Version)
out=build/deb
src=$out/det-$version
rm -rf "$out"
mkdir -p "$src"
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$src"
(cd "$src" && dpkg-buildpackage -us -uc -b) > "$out/build.log" 2>&1 || {
  tail -30 "$out/build.log" >&2
  echo "package: dpkg-buildpackage failed (whole log: $out/build.log)" >&2
  exit 1
}
lintian --fail-on error,warning --display-info "$out"/det_"$version"_*.changes | tee "$out/lintian.log" >&2
realpath "$out"/det_"$version"_amd64.deb
