#!/bin/sh
# Refresh the Vega, Vega-Lite and vega-embed builds inlined into HTML reports.
#
#   sh tools/vendor_vega.sh            # the versions below
#
# Needs npm (only to update the copies; users and CI never run it). Writes the minified UMD
# builds and each package's LICENSE into src/cuzk_diag/report/assets/ and records the versions
# in VENDORED.json there. After a change of version, regenerate and look at a report in a browser.
set -eu
VEGA=6.4.0
VEGA_LITE=6.5.0
VEGA_EMBED=7.3.0

root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/src/cuzk_diag/report/assets"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
npm pack --silent "vega@$VEGA" "vega-lite@$VEGA_LITE" "vega-embed@$VEGA_EMBED" >/dev/null
for pkg in "vega-$VEGA" "vega-lite-$VEGA_LITE" "vega-embed-$VEGA_EMBED"; do
  mkdir "$pkg"
  tar xzf "$pkg.tgz" -C "$pkg"
done
cp "vega-$VEGA/package/build/vega.min.js" "$dest/vega.min.js"
cp "vega-lite-$VEGA_LITE/package/build/vega-lite.min.js" "$dest/vega-lite.min.js"
cp "vega-embed-$VEGA_EMBED/package/build/vega-embed.min.js" "$dest/vega-embed.min.js"
cp "vega-$VEGA/package/LICENSE" "$dest/LICENSE.vega"
cp "vega-lite-$VEGA_LITE/package/LICENSE" "$dest/LICENSE.vega-lite"
cp "vega-embed-$VEGA_EMBED/package/LICENSE" "$dest/LICENSE.vega-embed"
cat > "$dest/VENDORED.json" <<JSON
{
  "vega": {"version": "$VEGA", "file": "vega.min.js", "license": "BSD-3-Clause"},
  "vega-lite": {"version": "$VEGA_LITE", "file": "vega-lite.min.js", "license": "BSD-3-Clause"},
  "vega-embed": {"version": "$VEGA_EMBED", "file": "vega-embed.min.js", "license": "BSD-3-Clause"}
}
JSON
echo "vendored vega $VEGA, vega-lite $VEGA_LITE, vega-embed $VEGA_EMBED into $dest"
