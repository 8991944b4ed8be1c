#!/usr/bin/env bash
# spotrun never deletes what the user owns: a checkpoint directory or pull
# target holding files spotrun did not put there, or overlapping the store
# or the work dir, is refused with a usage error naming them; directories
# spotrun made carry the user.spotrun mark and stay usable across resumes;
# a work dir without spotrun's marker is refused.
# The variables given to a job are not settings of a spotrun run inside it.
# Nothing inside the file store is followed through a symlink.
. "$(dirname "$0")/lib.sh"

mkdir -p proj/data && echo "print(1)" >proj/train.py && echo d >proj/data/x
mkdir -p src && echo state >src/model

# intact: the project directory still holds exactly what it held.
intact() { test "$(cat proj/train.py)" = "print(1)" && test "$(cat proj/data/x)" = d; }

test_expect_success 'run -d . in a project: exit 64 naming its files, nothing deleted' '
    (cd proj && expect_code 64 "$SPOTRUN" run -d . -- sh -c "exit 0") 2>err &&
    cat err &&
    grep "holds files spotrun did not put there" err &&
    grep "train.py" err && grep "data" err &&
    intact &&
    test ! -e "$SPOTRUN_STORE"/*/DONE
'

test_expect_success 'run -d DIR with DIR holding the store: exit 64, checkpoints kept' '
    "$SPOTRUN" push -q other src --step 1 &&
    expect_code 64 "$SPOTRUN" run -d "$TRASH" -- true 2>err &&
    cat err && grep "overlaps the store" err &&
    "$SPOTRUN" show other | grep "^checkpoints: *1$"
'

test_expect_success 'run -d inside the store or the work dir: exit 64' '
    expect_code 64 "$SPOTRUN" run -d "$SPOTRUN_STORE/other" -- true 2>err &&
    grep "overlaps the store" err &&
    expect_code 64 "$SPOTRUN" run -d "$SPOTRUN_WORK_DIR/mine" -- true 2>err &&
    grep "overlaps spotrun.s work dir" err &&
    "$SPOTRUN" pull -q other check && diff -r src check
'

test_expect_success 'pull RUN . in a project whose store is ./store: exit 64, nothing deleted' '
    (cd proj && SPOTRUN_STORE=./store "$SPOTRUN" push -q p ../src &&
        expect_code 64 env SPOTRUN_STORE=./store "$SPOTRUN" pull p . 2>../err) &&
    cat err && grep "overlaps the store" err &&
    intact && (cd proj && SPOTRUN_STORE=./store "$SPOTRUN" show p | grep "^checkpoints: *1$")
'

test_expect_success 'pull into a directory holding other files: exit 64 naming them, untouched' '
    mkdir -p mine && echo keep >mine/notes.txt &&
    expect_code 64 "$SPOTRUN" pull other mine 2>err &&
    grep "notes.txt" err &&
    test "$(ls -A mine)" = notes.txt && test "$(cat mine/notes.txt)" = keep
'

test_expect_success 'pull into a new dir, then again into the same dir: replaced (it is spotrun'"'"'s)' '
    "$SPOTRUN" pull -q other fresh-out && diff -r src fresh-out &&
    echo stale >fresh-out/stale &&
    "$SPOTRUN" pull -q other fresh-out && diff -r src fresh-out
'

test_expect_success 'pull --help says DIR is replaced' '
    "$SPOTRUN" pull --help | grep "DIR is replaced"
'

cat >job.sh <<'JOB'
#!/bin/sh
# Counts its attempts in the checkpoint dir; fails on the first one.
n=$(cat "$SPOTRUN_CKPT_DIR/n" 2>/dev/null || echo 0)
echo $((n + 1)) >"$SPOTRUN_CKPT_DIR/n"
"$SPOTRUN_BIN" commit --step "$n"
test "$n" -ge 1
JOB
chmod +x job.sh

test_expect_success 'a -d dir spotrun created is reused across wrapper runs (resume)' '
    expect_code 1 "$SPOTRUN" run --run-id own -d own-ckpt --max-restarts 0 -- ./job.sh 2>log1 &&
    test "$(cat own-ckpt/n)" = 1 &&
    "$SPOTRUN" run --run-id own -d own-ckpt -- ./job.sh 2>log2 &&
    cat log2 &&
    grep "restored checkpoint" log2 &&
    test "$(cat own-ckpt/n)" = 2
'

test_expect_success 'a -d dir the job removed and recreated is still the run'"'"'s on this node' '
    rm -rf own-ckpt && mkdir own-ckpt && echo 7 >own-ckpt/n &&
    expect_code 1 "$SPOTRUN" run --run-id own -d own-ckpt --fresh --max-restarts 0 -- ./job.sh \
        2>log3 &&
    test "$(cat own-ckpt/n)" = 1 || { cat log3; false; }
'

test_expect_success 'upgrade: a work dir with no marker (an older spotrun'"'"'s) is refused, untouched' '
    "$SPOTRUN" push -q old src --step 5 &&
    mkdir -p "$SPOTRUN_WORK_DIR/old/ckpt" && echo leftover >"$SPOTRUN_WORK_DIR/old/ckpt/junk" &&
    expect_code 64 "$SPOTRUN" run --run-id old -- true 2>err &&
    grep "work dir $SPOTRUN_WORK_DIR/old exists and spotrun did not make it" err &&
    grep "older spotrun" err &&
    test "$(cat "$SPOTRUN_WORK_DIR/old/ckpt/junk")" = leftover &&
    rm -r "$SPOTRUN_WORK_DIR/old" &&
    "$SPOTRUN" run --run-id old -- sh -c "cmp \"\$SPOTRUN_CKPT_DIR/model\" src/model" 2>err ||
        { cat err; false; }
'

cat >outer.sh <<'JOB'
#!/bin/sh
# The outer job: saves, runs a nested spotrun, then commits to its own wrapper.
echo outer >"$SPOTRUN_CKPT_DIR/outer.txt"
"$SPOTRUN_BIN" run -q --lease-ttl 0 -- sh -c 'echo "$SPOTRUN_RUN_ID $SPOTRUN_CKPT_DIR" >"$OUT/inner"; echo in >"$SPOTRUN_CKPT_DIR/inner.txt"' || exit 9
"$SPOTRUN_BIN" commit --step 7
JOB
chmod +x outer.sh

test_expect_success 'a spotrun run inside a job is a new run: the job'"'"'s variables are not its settings' '
    OUT=$PWD "$SPOTRUN" run --run-id outer -d outer-ckpt -- ./outer.sh 2>err ||
        { cat err; false; } &&
    read -r id dir <inner &&
    test "$id" != outer && test "$dir" != "$PWD/outer-ckpt" &&
    test "$(ls -A outer-ckpt)" = outer.txt &&
    "$SPOTRUN" show outer | grep -E "^ +1 +7 " &&
    "$SPOTRUN" show "$id" | grep "^state: *done"
'

# victim_intact: the directory the store's symlinks point at holds what it held.
victim_intact() { test "$(ls -A victim)" = secret && test "$(cat victim/secret)" = mine; }
mkdir -p victim && echo mine >victim/secret

test_expect_success 'file store: run --fresh on a run dir that is a symlink is refused, nothing deleted' '
    ln -s "$TRASH/victim" "$SPOTRUN_STORE/evil" &&
    expect_code 65 "$SPOTRUN" run --fresh --run-id evil -- true 2>err &&
    grep "is a symlink" err && victim_intact &&
    expect_code 65 "$SPOTRUN" run --fresh --lease-ttl 0 --run-id evil -- true 2>err &&
    grep "evil in store .* is a symlink" err && victim_intact
'

test_expect_success 'file store: gc and push write no lease or lock file through a symlinked run dir' '
    expect_code 65 "$SPOTRUN" gc evil --keep 1 2>err &&
    grep "is a symlink" err && victim_intact &&
    expect_code 65 "$SPOTRUN" push evil src 2>err &&
    victim_intact
'

test_expect_success 'file store: gc through a symlinked ckpt/ inside a run is refused' '
    "$SPOTRUN" push -q deep src && "$SPOTRUN" push -q deep src &&
    mv "$SPOTRUN_STORE/deep/ckpt" deep-ckpt && ln -s "$TRASH/victim" "$SPOTRUN_STORE/deep/ckpt" &&
    expect_code 65 "$SPOTRUN" gc deep --keep 1 2>err &&
    grep "deep/ckpt in store .* is a symlink" err && victim_intact
'

test_done
