# bash completion for spotrun: commands, sweep subcommands, each command's
# options (read from `spotrun CMD --help`, so they never drift from the
# binary) and run ids (from `spotrun ls`, only when the store is a local
# directory: listing S3 on every TAB is not cheap). Installed as
# share/bash-completion/completions/spotrun.

_spotrun_words() { # the words of a --help section: "commands:" lines
    "$1" "${@:2}" --help 2>/dev/null | awk '/^commands:/ {on=1; next} on && /^$/ {exit} on {print $1}'
}

_spotrun_options() {
    "$1" "${@:2}" --help 2>/dev/null | grep -oE '^ +(-[a-zA-Z], )?--[a-z0-9-]+' | grep -oE -- '--[a-z0-9-]+'
}

_spotrun_runs() {
    local store=${SPOTRUN_STORE:-} i
    for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
        [ "${COMP_WORDS[i]}" = --store ] && store=${COMP_WORDS[i + 1]}
    done
    case $store in s3://* | S3://*) return ;; esac
    "$1" ${store:+--store "$store"} ls 2>/dev/null | awk 'NR > 1 {print $1}'
}

_spotrun() {
    local bin=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]} prev=
    [ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD - 1]}
    COMPREPLY=()
    # The command: the first word after the global options (-v, -q, --store URL).
    local i cmd= sub= at=0
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        --store) i=$((i + 1)) ;;
        -v | -q | --verbose | --quiet) ;;
        --) break ;;
        *)
            if [ -z "$cmd" ]; then
                cmd=${COMP_WORDS[i]} at=$i
            elif { [ "$cmd" = sweep ] || [ "$cmd" = quota ]; } && [ -z "$sub" ]; then
                sub=${COMP_WORDS[i]}
            fi
            ;;
        esac
    done
    # After `run ... --`, the job's own command: complete it as a command line.
    for ((i = at + 1; at > 0 && i < COMP_CWORD; i++)); do
        if [ "${COMP_WORDS[i]}" = -- ]; then
            COMP_CWORD=$((COMP_CWORD - i - 1))
            COMP_WORDS=("${COMP_WORDS[@]:i+1}")
            declare -F _command_offset >/dev/null && _command_offset 0 ||
                mapfile -t COMPREPLY < <(compgen -c -- "$cur")
            return
        fi
    done
    case $prev in
    --store | --work-dir | -d | --ckpt-dir | --metrics-file | -o | --output | --prices | --svg | --html)
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        return
        ;;
    --by) # stats: a comma list; complete its last key (label keys are the user's own)
        local done=${cur%"${cur##*,}"}
        mapfile -t COMPREPLY < <(compgen -P "$done" -W "instance_type zone cloud host day week month cause" -- "${cur##*,}")
        return
        ;;
    --run-id | -r)
        mapfile -t COMPREPLY < <(compgen -W "$(_spotrun_runs "$bin")" -- "$cur")
        return
        ;;
    --label | --ckpt-exclude) # KEY=VALUE, a GLOB: the user's own words, never a file name
        return
        ;;
    esac
    if [ -z "$cmd" ]; then
        mapfile -t COMPREPLY < <(compgen -W "$(_spotrun_words "$bin") help version --version --help -v -q --store" -- "$cur")
        return
    fi
    if { [ "$cmd" = sweep ] || [ "$cmd" = quota ]; } && [ -z "$sub" ]; then
        mapfile -t COMPREPLY < <(compgen -W "$(_spotrun_words "$bin" "$cmd")" -- "$cur")
        return
    fi
    if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$(_spotrun_options "$bin" "$cmd" ${sub:+"$sub"})" -- "$cur")
        return
    fi
    case $cmd in
    show | report | pull | export | gc | push | approve)
        mapfile -t COMPREPLY < <(compgen -W "$(_spotrun_runs "$bin")" -- "$cur")
        ;;
    *)
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        ;;
    esac
}
complete -F _spotrun spotrun
