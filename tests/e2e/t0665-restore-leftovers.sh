#!/usr/bin/env bash
# A restore killed midway leaves "<ckpt>.spotrun-tmp.*" beside the
# checkpoint dir, in a directory that is the user's: the next run removes
# such a leftover only when it carries spotrun's mark (the codec marks it as
# it makes it), never a directory that merely has the name.
. "$(dirname "$0")/lib.sh"

mkdir -p src && echo state >src/model
"$SPOTRUN" push -q r src --step 1 >/dev/null 2>&1

test_expect_success 'a marked leftover goes, a user directory with the same kind of name stays' '
    mkdir -p proj/out.spotrun-tmp.mine proj/out.spotrun-tmp.old &&
    echo precious >proj/out.spotrun-tmp.mine/notes &&
    echo debris >proj/out.spotrun-tmp.old/part &&
    spotrun_made proj/out.spotrun-tmp.old &&
    "$SPOTRUN" run --run-id r -d proj/out --no-preload -- sh -c "test -s \"\$SPOTRUN_CKPT_DIR/model\"" 2>run.log &&
    cat run.log &&
    test "$(cat proj/out.spotrun-tmp.mine/notes)" = precious &&
    test ! -e proj/out.spotrun-tmp.old &&
    grep "leaving .*out.spotrun-tmp.mine: named like a restore.s leftover, but not marked" run.log
'

test_done
