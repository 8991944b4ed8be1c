#!/usr/bin/env bash
# A checkpoint pushed by spotrun to Azure Blob is an ordinary block blob:
# the stock Azure CLI (Debian's azure-cli) lists it and downloads it, stock
# `zstd -d | tar -x` unpacks it byte-identical, and an archive uploaded by
# the Azure CLI is restored by spotrun. Skipped (with the reason) when `az`
# is not installed: azure-cli is not in scripts/deps.sh (docs/azure.md).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/azlib.sh"
if ! command -v az >/dev/null; then
    say "# skip: the Azure CLI (az) is not installed (apt-get install azure-cli)"
    say "0 passed, 0 failed"
    exit 0
fi
az_start
export AZURE_CONFIG_DIR=$TRASH/azcli AZURE_CORE_COLLECT_TELEMETRY=no
azcli() { az storage blob "$@" --connection-string "$AZURE_STORAGE_CONNECTION_STRING" --only-show-errors; }
ck=$test_name/r1/ckpt

test_expect_success 'spotrun push (in blocks), az storage blob download, zstd -d | tar -x: byte-identical' '
    mkdir -p src/d && head -c 3000000 /dev/urandom >src/d/w.bin && seq 1 100000 >src/log.txt &&
    SPOTRUN_AZ_BLOCK_SIZE=1M "$SPOTRUN" push r1 src --step 3 &&
    azcli download -c ckpt -n $ck/0000000001/data.tar.zst -f got.tar.zst >/dev/null &&
    mkdir out && zstd -d -c got.tar.zst | tar -x -C out &&
    diff -r src out
'

test_expect_success 'az storage blob list sees the layout, with the sizes the manifest says' '
    azcli list -c ckpt --prefix $ck/ --query "[].[name, properties.contentLength]" -o tsv >list.tsv &&
    grep -P "^$ck/0000000001/data.tar.zst\t$(stat -c %s got.tar.zst)$" list.tsv &&
    grep "^$ck/0000000001/MANIFEST.json" list.tsv
'

test_expect_success 'an archive uploaded by az storage blob upload restores with spotrun' '
    azcli download -c ckpt -n $ck/0000000001/MANIFEST.json -f m.json >/dev/null &&
    sed "s/\"run_id\": \"r1\"/\"run_id\": \"r2\"/" m.json >m2.json &&
    azcli upload -c ckpt -n $test_name/r2/ckpt/0000000001/data.tar.zst -f got.tar.zst >/dev/null &&
    azcli upload -c ckpt -n $test_name/r2/ckpt/0000000001/MANIFEST.json -f m2.json >/dev/null &&
    "$SPOTRUN" pull r2 out3 && diff -r src out3
'

test_done
