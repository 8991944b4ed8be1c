#!/usr/bin/env bash
# Installing the Python module the usual ways, offline (no package index):
# pip builds a wheel with the in-tree backend (no setuptools), pip install
# --target, into a venv, editable, from the sdist, and cmake --install into
# a prefix; each install imports and talks to a wrapper.
. "$(dirname "$0")/lib.sh"

export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
export PIP_CACHE_DIR=$TRASH/pip-cache PYTHONDONTWRITEBYTECODE=1
unset PYTHONPATH
pip() { "$PY" -m pip "$@"; }

# works DIR...: with DIR on PYTHONPATH (or none), the module imports from
# under DIR (never from the source tree) and commits under a real wrapper.
works() {
    cat >probe.py <<\PY
import os, sys, spotrun
where = os.path.realpath(spotrun.__file__)
want = os.path.realpath(sys.argv[1])
assert where.startswith(want + os.sep), (where, want)
spotrun.save("x.txt", "1")
seq = spotrun.commit(1)
with open("probe.out", "w") as f:  # not stdout: the wrapper's log lines share it
    print("version", spotrun.__version__, "seq", seq, file=f)
PY
    local id
    rm -f probe.out
    id=probe-$test_count-$(printf %s "$*" | cksum | cut -d" " -f1)
    "$SPOTRUN" run --run-id "$id" --max-restarts 0 -- "${2:-$PY}" probe.py "$1" >probe.log 2>&1 ||
        { cat probe.log; return 1; }
    cat probe.log probe.out
    grep -q "^version [0-9.]* seq 1$" probe.out
}

test_expect_success 'pip is there (python3-pip; scripts/deps.sh installs it)' '
    pip --version
'

test_expect_success 'pip wheel builds a pure-Python wheel offline with the in-tree backend' '
    pip wheel --no-deps -w wheels "$SRCDIR/python" >wheel.log 2>&1 || { cat wheel.log; exit 1; }
    ls wheels &&
    "$PY" - wheels/spotrun-*-py3-none-any.whl <<\PY
import base64, hashlib, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = z.namelist()
print("\n".join(names))
assert "spotrun/__init__.py" in names and "spotrun/py.typed" in names
assert "spotrun/launch.py" in names
assert not [n for n in names if "tests" in n or "_spotrun_build" in n or n.endswith(".pyc")], names
record = [n for n in names if n.endswith(".dist-info/RECORD")][0]
for line in z.read(record).decode().splitlines():
    name, digest, size = line.rsplit(",", 2)
    if not digest:
        continue
    data = z.read(name)
    want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    assert digest == want and int(size) == len(data), name
PY
'

test_expect_success 'pip install --target DIR, then import from DIR' '
    pip install --no-deps --target target "$SRCDIR/python" >target.log 2>&1 || { cat target.log; exit 1; }
    PYTHONPATH=$TRASH/target works "$TRASH/target"
'

test_expect_success 'pip install into a venv (pip --python), and an editable install' '
    "$PY" -m venv --without-pip venv &&
    pip --python venv/bin/python install "$SRCDIR/python" >venv.log 2>&1 || { cat venv.log; exit 1; }
    works "$TRASH/venv/lib" "$TRASH/venv/bin/python" &&
    "$PY" -m venv --without-pip venv-e &&
    pip --python venv-e/bin/python install -e "$SRCDIR/python" >venv-e.log 2>&1 ||
        { cat venv-e.log; exit 1; }
    works "$SRCDIR/python" "$TRASH/venv-e/bin/python"
'

test_expect_success 'the launcher from a venv install starts ranks that import spotrun from it' '
    cat >rank.py <<-\PY &&
	import os, spotrun
	print("rank %s of %s imports %s" % (os.environ["RANK"], os.environ["WORLD_SIZE"], spotrun.__file__))
	PY
    (cd / && "$TRASH/venv/bin/python" -m spotrun.launch --nproc-per-node 2 "$TRASH/rank.py") >ranks.out 2>&1 ||
        { cat ranks.out; exit 1; }
    cat ranks.out &&
    grep "^rank 0 of 2 imports $TRASH/venv/lib/.*/spotrun/__init__.py$" ranks.out &&
    grep "^rank 1 of 2 imports $TRASH/venv/lib/.*/spotrun/__init__.py$" ranks.out
'

test_expect_success 'the sdist builds and installs' '
    (cd "$SRCDIR/python" && "$PY" -c "import sys, _spotrun_build as b; print(b.build_sdist(sys.argv[1]))" "$TRASH") >sdist.name &&
    tar -tzf "$(cat sdist.name)" >sdist.list &&
    cat sdist.list &&
    grep -q "/PKG-INFO$" sdist.list && grep -q "/pyproject.toml$" sdist.list &&
    pip install --no-deps --target sdist-target "$TRASH/$(cat sdist.name)" >sdist.log 2>&1 ||
        { cat sdist.log; exit 1; }
    PYTHONPATH=$TRASH/sdist-target works "$TRASH/sdist-target"
'

test_expect_success 'cmake --install puts it in lib/python3/dist-packages under the prefix' '
    build=$(dirname "$SPOTRUN")
    while [ "$build" != / ] && [ ! -e "$build/CMakeCache.txt" ]; do build=$(dirname "$build"); done
    test -e "$build/CMakeCache.txt" &&
    cmake --install "$build" --prefix "$TRASH/prefix" >install.log 2>&1 || { cat install.log; exit 1; }
    site=$TRASH/prefix/lib/python3/dist-packages &&
    test -e "$site/spotrun/__init__.py" &&
    ! find "$site/spotrun" -name "*.pyc" | grep . &&
    PYTHONPATH=$site works "$site"
'

test_done
