#!/usr/bin/env bash
# A checkpoint pushed by spotrun to S3 is an ordinary object: the stock AWS
# CLI downloads it, stock `zstd -d | tar -x` unpacks it byte-identical, and
# an archive uploaded by the AWS CLI is listed and restored by spotrun.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"
s3_start
command -v /usr/bin/aws aws >/dev/null || { say "awscli is required (scripts/deps.sh installs it)"; exit 1; }

test_expect_success 'spotrun push, aws s3 cp, zstd -d | tar -x: byte-identical' '
    mkdir -p src/d && head -c 3000000 /dev/urandom >src/d/w.bin && seq 1 100000 >src/log.txt &&
    SPOTRUN_S3_PART_SIZE=5M "$SPOTRUN" push r1 src --step 3 &&
    awscli s3 cp s3://bkt/t0220-s3-interop/r1/ckpt/0000000001/data.tar.zst got.tar.zst >/dev/null &&
    mkdir out && zstd -d -c got.tar.zst | tar -x -C out &&
    diff -r src out
'

test_expect_success 'a multipart object (several parts) reads back with the AWS CLI' '
    head -c 12582912 /dev/urandom >src/big.bin &&
    SPOTRUN_S3_PART_SIZE=5M "$SPOTRUN" push r1 src --step 4 &&
    awscli s3 cp s3://bkt/t0220-s3-interop/r1/ckpt/0000000002/data.tar.zst got2.tar.zst >/dev/null &&
    mkdir out2 && zstd -d -c got2.tar.zst | tar -x -C out2 && diff -r src out2 &&
    awscli s3 cp s3://bkt/t0220-s3-interop/r1/ckpt/0000000002/MANIFEST.json m.json >/dev/null &&
    grep "\"stored_bytes\": $(stat -c %s got2.tar.zst)" m.json
'

test_expect_success 'an archive copied in by the AWS CLI restores with spotrun' '
    awscli s3 cp got2.tar.zst s3://bkt/t0220-s3-interop/r2/ckpt/0000000001/data.tar.zst >/dev/null &&
    sed "s/\"run_id\": \"r1\"/\"run_id\": \"r2\"/; s/\"seq\": 2/\"seq\": 1/" m.json >m2.json &&
    awscli s3 cp m2.json s3://bkt/t0220-s3-interop/r2/ckpt/0000000001/MANIFEST.json >/dev/null &&
    "$SPOTRUN" pull r2 out3 && diff -r src out3
'

test_done
