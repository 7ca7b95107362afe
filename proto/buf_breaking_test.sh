#!/bin/bash
# buf breaking (FILE rules) of proto/ against the last release: the newest image in proto/releases/
# (vX.Y.Z.binpb, `buf build` output committed when X.Y.Z was released), so the check needs no
# network and no git history: it works the same in a fresh clone. Fails on any breaking change.
set -euo pipefail
buf="$(pwd)/$1"
export BUF_CACHE_DIR="${TEST_TMPDIR:-$(mktemp -d)}/buf-cache"
cd proto
latest=$(ls releases/v*.binpb | sort -V | tail -n 1)
[ -n "$latest" ] || { echo "no release image in proto/releases/" >&2; exit 1; }
"$buf" breaking --against "$latest"
echo "buf breaking: no breaking change against $latest"
