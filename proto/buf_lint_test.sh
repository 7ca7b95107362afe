#!/bin/bash
# buf lint (STANDARD rules) over proto/: fails on any finding, printing buf's report.
set -euo pipefail
buf="$(pwd)/$1"
export BUF_CACHE_DIR="${TEST_TMPDIR:-$(mktemp -d)}/buf-cache"
cd proto
"$buf" lint
echo "buf lint: clean"
