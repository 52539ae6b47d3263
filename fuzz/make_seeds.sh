#!/usr/bin/env bash
# Regenerates the committed seed corpora in fuzz/corpus/<target>/ with the seed writer
# (fuzz/make_seeds.cpp), built in the fuzz preset's tree.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset fuzz >/dev/null
cmake --build build/fuzz --target fuzz_make_seeds -j2
rm -rf fuzz/corpus
build/fuzz/fuzz/fuzz_make_seeds fuzz/corpus
find fuzz/corpus -type f | sort | sed 's/^/  /'
du -sh fuzz/corpus
