#!/usr/bin/env bash
# The packages CPack makes from this build (docs/install.md): a .deb whose
# dependencies are computed from the binaries and that Debian's checker
# (lintian) finds no error in, and a relocatable tarball whose wrapper finds
# its shim and whose job finds the Python module wherever the tree is
# unpacked.
. "$(dirname "$0")/lib.sh"

build=$(cd "$(dirname "$SPOTRUN")/.." && pwd)

test_expect_success 'cpack makes a .deb and a .tar.gz from the build' '
    cpack --config "$build/CPackConfig.cmake" -G "DEB;TGZ" -B "$TRASH/pkg" >cpack.log 2>&1 ||
        { cat cpack.log; false; } &&
    ls pkg/spotrun_*.deb pkg/spotrun-*.tar.gz
'

test_expect_success 'the .deb depends on the package of every library spotrun links, versioned' '
    dpkg-deb -f pkg/spotrun_*.deb Depends | tr "," "\n" | sed "s/^ *//; s/ .*//" | sort >depends &&
    cat depends &&
    readelf -d "$SPOTRUN" | sed -n "s/.*(NEEDED).*\[\(.*\)\]/\1/p" >needed &&
    test -s needed &&
    while read -r soname; do
        path=$(ldconfig -p | awk -v s="$soname" "\$1 == s && !p {print \$NF; p = 1}") &&
        test -n "$path" &&
        real=$(readlink -f "$path") &&
        pkg=$( (dpkg -S "$path" || dpkg -S "$real" || dpkg -S "${real#/usr}") 2>/dev/null |
            sed -n 1p | cut -d: -f1) &&
        echo "$soname -> $pkg" &&
        grep -x -q "$pkg" depends || { echo "missing: $pkg for $soname"; return 1; }
    done <needed &&
    dpkg-deb -f pkg/spotrun_*.deb Depends | grep -E "libc6 \(>= 2\.[0-9]+\)"
'

test_expect_success 'the .deb holds the wrapper, the shim, the header, the module, the completions and the man page under /usr' '
    dpkg-deb -c pkg/spotrun_*.deb | awk "{print \$6}" >contents &&
    for f in ./usr/bin/spotrun ./usr/lib/libspotrun.so ./usr/include/spotrun.h \
        ./usr/lib/python3/dist-packages/spotrun/__init__.py \
        ./usr/lib/python3/dist-packages/spotrun/torch.py \
        ./usr/share/bash-completion/completions/spotrun ./usr/share/zsh/vendor-completions/_spotrun \
        ./usr/share/doc/spotrun/copyright ./usr/share/doc/spotrun/changelog.gz; do
        grep -x -F "$f" contents || { echo "not in the .deb: $f"; return 1; }
    done &&
    if command -v scdoc >/dev/null; then grep -x -F ./usr/share/man/man1/spotrun.1.gz contents; fi &&
    ! grep -q "__pycache__\|\.pyc$" contents
'

# lintian's tags are its names for what it checks; each warning it still
# gives is one docs/install.md ("What lintian says") explains.
if command -v lintian >/dev/null; then
    test_expect_success 'lintian finds no error in the .deb, and docs/install.md explains each warning left' '
        { lintian --no-cfg pkg/spotrun_*.deb >lintian.out 2>&1 || { cat lintian.out; false; }; } &&
        cat lintian.out &&
        refute grep "^E: " lintian.out &&
        sed -n "s/^W: spotrun: \([a-z0-9-]*\).*/\1/p" lintian.out | sort -u >warnings &&
        while read -r tag; do
            grep -q -F "\`$tag\`" "$SRCDIR/docs/install.md" ||
                { echo "lintian warns $tag; docs/install.md does not say why it stands"; return 1; }
        done <warnings
    '
else
    test_skip 'lintian finds no error in the .deb' 'lintian is not installed (scripts/deps.sh installs it)'
fi

test_expect_success 'the tarball unpacked anywhere runs a job with its own shim and Python module' '
    mkdir -p elsewhere/deep && tar -xzf pkg/spotrun-*.tar.gz -C elsewhere/deep &&
    top=$(cd elsewhere/deep/spotrun-* && pwd) &&
    (unset SPOTRUN_PRELOAD && "$top/bin/spotrun" --version) >version &&
    cat version &&
    grep -x -F "shim: $top/lib/libspotrun.so" version &&
    (unset SPOTRUN_PRELOAD &&
        PYTHONPATH="$top/lib/python3/dist-packages" "$top/bin/spotrun" run --run-id tgz -- \
            "$PY" -c "
import os, spotrun
print(\"module\", spotrun.__file__)
print(\"preload\", os.environ.get(\"LD_PRELOAD\", \"\"))
open(os.path.join(os.environ[\"SPOTRUN_CKPT_DIR\"], \"w\"), \"w\").write(\"1\")
spotrun.commit(1)
") >job.out 2>job.err &&
    cat job.out &&
    grep -x -F "module $top/lib/python3/dist-packages/spotrun/__init__.py" job.out &&
    grep -x -F "preload $top/lib/libspotrun.so" job.out &&
    "$SPOTRUN" show tgz >show.out && grep -i "done" show.out
'

test_done
