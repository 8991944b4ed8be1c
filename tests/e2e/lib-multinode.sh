# lib-multinode.sh - several "nodes" of one multi-node run on this machine,
# each its own wrapper with its own HOME and work dir against the one store
# ($SPOTRUN_STORE). Source after lib.sh; the script writes ./nodejob.sh.

declare -a pid
# start_node RUN N R LOG [spotrun run options...]: node R of N runs
# ./nodejob.sh in the background; its wrapper's pid is ${pid[R]}.
start_node() {
    local run=$1 n=$2 r=$3 log=$4
    shift 4
    mkdir -p "$TRASH/home-$run-$r"
    HOME=$TRASH/home-$run-$r SPOTRUN_WORK_DIR=$TRASH/work-$run-$r \
        "$SPOTRUN" run --run-id "$run" --nodes "$n" --node-rank "$r" --peer-poll 100ms "$@" \
        -- ./nodejob.sh >"$log" 2>&1 &
    pid[$r]=$!
}
# notify_node RUN R DEADLINE: a preemption notice to node R's wrapper.
notify_node() {
    HOME=$TRASH/home-$1-$2 SPOTRUN_WORK_DIR=$TRASH/work-$1-$2 \
        "$SPOTRUN" notify --run-id "$1" --deadline "$3"
}

# write_nodejob: the usual ./nodejob.sh: commits step 10, says ready, and
# commits step 20 when asked (USR1), then runs until stopped; a group's
# set 20 is complete only if every node was asked.
write_nodejob() {
    cat >nodejob.sh <<\EOF2
#!/bin/bash
want=0
trap 'want=1' USR1
echo x >"$SPOTRUN_CKPT_DIR/f"
"$SPOTRUN_BIN" commit --step 10 || exit 1
echo ready
while [ $want = 0 ]; do sleep 0.05; done
"$SPOTRUN_BIN" commit --step 20
while :; do sleep 0.05; done
EOF2
    chmod +x nodejob.sh
}
