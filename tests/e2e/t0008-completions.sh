#!/usr/bin/env bash
# Shell completions (completions/): commands, sweep subcommands, options read
# from the binary's own --help, run ids from a local store, never a listing
# of S3 on a TAB. bash runs the real function; zsh runs ours with the
# completion system's builtins (compadd, _describe, _files) standing in.
. "$(dirname "$0")/lib.sh"

export PATH="$(dirname "$SPOTRUN"):$PATH"
comp="$SRCDIR/completions"

# bash_complete WORD...: what TAB offers for the last word.
bash_complete() {
    bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _spotrun
             [ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}"' _ "$comp/spotrun.bash" "$@" | sort
}

# zsh_complete WORD...: the same through the zsh function (the stand-ins
# filter by the typed prefix, as compadd does).
zsh_complete() {
    zsh -f -c '
        _describe() { print -l -- ${(M)${(P)2}:#${PREFIX}*} | cut -d: -f1 }
        compadd() { [[ $1 == -a ]] && print -l -- ${(M)${(P)2}:#${PREFIX}*} }
        _files() { print -- "<files>" }
        _normal() { print -- "<command line: ${words[1]} at $CURRENT>" }
        words=("$@"); CURRENT=$#; PREFIX=${words[CURRENT]}
        . "$0"' "$comp/_spotrun" "$@" | sort
}

test_expect_success 'setup: three runs in the local store' '
    for r in alpha-1 alpha-2 beta; do "$SPOTRUN" run --run-id $r -- true 2>/dev/null || return 1; done
'

test_expect_success 'bash: every command of spotrun --help, and only the ones a prefix names' '
    bash_complete spotrun "" >all &&
    for c in run commit notify metric ls show report pull export push sweep gc; do
        grep -x -q "$c" all || { echo "missing: $c"; return 1; }
    done &&
    test "$(bash_complete spotrun sh)" = show &&
    test "$(bash_complete spotrun -v --store "$SPOTRUN_STORE" sw)" = sweep
'

test_expect_success 'bash: a command'"'"'s options come from its --help' '
    bash_complete spotrun run --max-r >got && test "$(cat got)" = --max-restarts &&
    bash_complete spotrun show --js >got && test "$(cat got)" = --json &&
    bash_complete spotrun sweep w >got && test "$(cat got)" = work &&
    test "$(bash_complete spotrun sweep can)" = cancel &&
    bash_complete spotrun sweep init --para >got && grep -x -- --param got
'

test_expect_success 'bash and zsh: --label for run, ls and sweep init; no file names after it' '
    test "$(bash_complete spotrun run --lab)" = --label &&
    test "$(bash_complete spotrun ls --lab)" = --label &&
    test "$(bash_complete spotrun sweep init --lab)" = --label &&
    test -z "$(bash_complete spotrun run --label "")" &&
    test "$(zsh_complete spotrun run --lab)" = --label &&
    test "$(zsh_complete spotrun ls --lab)" = --label &&
    test "$(zsh_complete spotrun sweep init --lab)" = --label &&
    test -z "$(zsh_complete spotrun run --label "")"
'

test_expect_success 'bash: stats, its options, --by keys (the last of a comma list) and files' '
    test "$(bash_complete spotrun sta)" = stats &&
    bash_complete spotrun stats --b >got && test "$(cat got)" = --by &&
    bash_complete spotrun stats --pri >got && grep -x -- --prices got &&
    test "$(bash_complete spotrun stats --by we)" = week &&
    test "$(bash_complete spotrun stats --by team,instance_t)" = team,instance_type &&
    touch out.svg && test "$(bash_complete spotrun stats --svg out.s)" = out.svg
'

test_expect_success 'bash: run ids from a local store, none from S3, the job'"'"'s own command after --' '
    bash_complete spotrun show al >got && printf "alpha-1\nalpha-2\n" | diff - got &&
    bash_complete spotrun report "" >got && printf "alpha-1\nalpha-2\nbeta\n" | diff - got &&
    bash_complete spotrun --store s3://bucket/x show "" >got && test ! -s got &&
    bash_complete spotrun run --every 5m -- bas >got && grep -x bash got
'

test_expect_success 'zsh: the same commands, options and run ids' '
    zsh -n "$comp/_spotrun" &&
    zsh_complete spotrun "" >all &&
    for c in run commit ls show sweep gc; do grep -x -q "$c" all || { echo "missing: $c"; return 1; }; done &&
    test "$(zsh_complete spotrun sweep rep)" = report &&
    test "$(zsh_complete spotrun run --max-r)" = --max-restarts &&
    zsh_complete spotrun show al >got && printf "alpha-1\nalpha-2\n" | diff - got &&
    test -z "$(zsh_complete spotrun --store s3://b/x show "")" &&
    zsh_complete spotrun run -- py >got && grep -F "<command line: py at 1>" got &&
    test "$(zsh_complete spotrun stats --csv)" = --csv &&
    test "$(zsh_complete spotrun stats --by team,zo)" = team,zone &&
    test "$(zsh_complete spotrun stats --html "")" = "<files>"
'

test_expect_success 'bash and zsh: quota subcommands and their options; approve takes a run id' '
    test "$(bash_complete spotrun quota s | paste -sd" ")" = "set show" &&
    test "$(bash_complete spotrun quota set --approve-a)" = --approve-above &&
    bash_complete spotrun approve al >got && printf "alpha-1\nalpha-2\n" | diff - got &&
    test "$(zsh_complete spotrun quota sh)" = show &&
    zsh_complete spotrun approve al >got && printf "alpha-1\nalpha-2\n" | diff - got
'

test_done
