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
