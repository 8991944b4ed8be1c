#!/usr/bin/env bash
# portability.sh FILE... - what each ELF file needs of the machine it runs
# on: the newest glibc symbol version it references and its shared-library
# dependencies (DT_NEEDED). The build prints it for spotrun and
# libspotrun.so; docs/install.md explains how to read it.
#   --shim FILE   also fail (exit 1) unless FILE needs libc alone: the shim
#                 is LD_PRELOADed into every process of a job, whatever
#                 its image holds, so it must not pull in any other library.
set -euo pipefail
newest_glibc() { # the highest GLIBC_x.y among the file's dynamic symbols
    objdump -T "$1" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n1
}
needed() {
    readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ' | sed 's/ $//'
}
rc=0
shim=
for arg in "$@"; do
    if [ "$arg" = --shim ]; then shim=next; continue; fi
    [ -f "$arg" ] || { echo "portability.sh: $arg: no such file" >&2; exit 2; }
    printf '%s: needs glibc >= %s; links %s\n' "$(basename "$arg")" "$(newest_glibc "$arg")" "$(needed "$arg")"
    if [ "$shim" = next ]; then
        shim=
        extra=$(needed "$arg" | tr ' ' '\n' | grep -v -x -e 'libc.so.6' -e 'ld-linux-x86-64.so.2' -e 'ld-linux-aarch64.so.1' || true)
        extra=$(echo $extra)
        if [ -n "$extra" ]; then
            echo "portability.sh: the shim $(basename "$arg") must link libc alone; it also needs: $extra" >&2
            rc=1
        fi
    fi
done
exit $rc
