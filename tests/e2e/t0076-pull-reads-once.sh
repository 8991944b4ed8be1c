#!/usr/bin/env bash
# pull checks the checkpoint's checksum as its frames stream through the
# extraction: the stored object is read once, not once to extract it and
# again to hash it (docs/archive-format.md, rule 1). The bytes read are the
# shell's rchar (/proc/self/io counts the children it has waited for).
. "$(dirname "$0")/lib.sh"

# rchar_of cmd...: runs cmd in a fresh shell; prints the bytes it read.
rchar_of() {
    sh -c '"$@" || exit 1; awk "/^rchar/ {print \$2}" /proc/$$/io' sh "$@"
}

mkdir -p tree/sub
head -c 24M /dev/urandom >tree/weights.bin
head -c 5M /dev/urandom >tree/sub/optim.bin
echo meta >tree/meta.json

test_expect_success 'pull reads the stored object once' '
    "$SPOTRUN" push -q r tree --step 1 &&
    obj=$(find "$SPOTRUN_STORE" -name data.tar.zst) &&
    size=$(stat -c %s "$obj") &&
    read_bytes=$(rchar_of "$SPOTRUN" pull -q r out) &&
    diff -r tree out &&
    say "object: $size bytes; pull read $read_bytes" &&
    test "$read_bytes" -lt $((size + size / 4))
'

test_done
