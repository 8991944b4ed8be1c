#!/usr/bin/env bash
# container-test.sh - spotrun in a real container runtime, installed from its
# .deb into an image that never built it (examples/container/Dockerfile):
#   1. a Debian 12 root filesystem from the Debian registry (mmdebstrap),
#      imported as the base image, and on it "the user's PyTorch image"
#      (Debian's python3-torch, nothing of spotrun);
#   2. the Dockerfile built FROM that image with podman: a builder stage
#      compiles spotrun and packs the .deb, the final stage (no compiler, no
#      -dev package) installs it with apt-get: the proof that the package's
#      dependencies are complete;
#   3. the demo's PyTorch job (examples/pytorch/train.py, the installed
#      Python module) in the container, its store a host directory mounted
#      in: `podman stop -t 30` mid-run gives a durable checkpoint and exit
#      75; `podman run` again resumes it; the final weights equal an
#      uninterrupted run's;
#   4. the same with the store on the S3 test server on the host's loopback
#      (the container on the host network);
#   5. a shell job (spotrun commit from the job) through the same cycle;
#   6. a 2-rank DDP job through the launcher the .deb installed.
# Needs root (podman, mmdebstrap; installed when missing). When the
# runtime cannot run a container here it says which step failed and why,
# and runs the clean-machine install test in a chroot instead (chroot_test);
# once a container runs, every failure is a failure.
# scripts/test.sh runs it as a stage beside the suites (SPOTRUN_TEST_CONTAINER=0
# skips it); each image is built once per run (the two base images once per
# machine).
#
# This machine's kind has a hybrid cgroup hierarchy (v1 controllers) and
# no CAP_SYS_RESOURCE: crun refuses hybrid cgroups, and podman's default
# rlimits cannot be set, so the runtime is runc and default_ulimits is
# empty (a containers.conf of this script's own, nothing system-wide).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${CONTAINER_TEST_DIR:-/tmp/spotrun-container-test}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$work"
skip() { echo "container-test: skipped: $*"; exit 0; }
say() { echo "container-test: $*"; }
fail() { echo "container-test: FAILED: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "needs root (podman and mmdebstrap as root)"
need=()
for p in podman mmdebstrap runc uidmap; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
    say "installing ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" \
        >"$work/apt.log" 2>&1 || skip "apt-get install ${need[*]} failed (see $work/apt.log)"
fi

export CONTAINERS_CONF=$work/containers.conf
printf '[containers]\ndefault_ulimits = []\n[engine]\nruntime = "runc"\n' >"$CONTAINERS_CONF"
base=localhost/spotrun-test-debian12:base
image=localhost/spotrun-test:latest

# The shell job of step 5 (and of the chroot): sums 1..300, one step per
# 50 ms; commits its state when asked (spotrun commit from its own trap).
job='s=0; i=0
if [ -f "$SPOTRUN_CKPT_DIR/state" ]; then read i s <"$SPOTRUN_CKPT_DIR/state"; echo "resumed at $i"; fi
trap "echo \$i \$s >\"\$SPOTRUN_CKPT_DIR/state\"; spotrun commit --step \$i" USR1
while [ $i -lt 300 ]; do i=$((i + 1)); s=$((s + i)); sleep 0.05; done
echo "sum $s"'

# Where podman cannot run a container: the clean-machine install test alone,
# in a chroot. A Debian 12 minbase root filesystem (no compiler, no -dev
# package) gets the .deb of this checkout by `apt-get install`, then a job
# in it goes through a checkpoint, a SIGTERM (exit 75) and a resume.
# CONTAINER_TEST_CHROOT=1 takes this path even where podman runs.
chroot_test() { # REASON
    say "podman cannot run a container here ($1); the install test runs in a chroot instead"
    local b=$work/build-deb rootfs=$work/chroot
    cmake -S "$root" -B "$b" -DCMAKE_BUILD_TYPE=Release -DSPOTRUN_TESTS=OFF >"$work/deb.log" 2>&1 &&
        cmake --build "$b" -j"$(nproc)" >>"$work/deb.log" 2>&1 &&
        (cd "$b" && rm -f spotrun_*.deb && cpack -G DEB >>"$work/deb.log" 2>&1) ||
        fail "building the .deb (log: $work/deb.log)"
    local deb
    deb=$(ls "$b"/spotrun_*.deb)
    umount "$rootfs/proc" 2>/dev/null || true
    rm -rf "$rootfs"
    mmdebstrap --variant=minbase --customize-hook="copy-in $deb /tmp" \
        --customize-hook='chroot "$1" apt-get install -y --no-install-recommends /tmp/'"$(basename "$deb")" \
        bookworm "$rootfs" "$mirror" >"$work/chroot.log" 2>&1 ||
        skip "mmdebstrap with the .deb failed (see $work/chroot.log)"
    grep -q "Setting up spotrun" "$work/chroot.log" || fail "apt-get did not install the .deb (see $work/chroot.log)"
    ! chroot "$rootfs" sh -c 'command -v cc || command -v gcc || ls /usr/include/curl' >/dev/null 2>&1 ||
        fail "the chroot holds a compiler or -dev headers: the install test proves nothing"
    mount -t proc proc "$rootfs/proc" || skip "cannot mount /proc in the chroot"
    trap "umount '$rootfs/proc' 2>/dev/null || true" EXIT
    mkdir -p "$rootfs/store"
    chroot "$rootfs" env -i PATH=/usr/bin:/bin HOME=/root SPOTRUN_STORE=/store SPOTRUN_RUN_ID=ctr \
        spotrun run -- sh -c "$job" >"$work/chroot1.log" 2>&1 &
    local pid=$! code=0 i
    for i in $(seq 100); do grep -q "started sh" "$work/chroot1.log" && break; sleep 0.1; done
    grep -q "started sh" "$work/chroot1.log" || fail "chroot: the job did not start: $(cat "$work/chroot1.log")"
    sleep 3
    kill -TERM "$pid"
    wait "$pid" || code=$?
    cat "$work/chroot1.log"
    [ "$code" = 75 ] || fail "chroot: spotrun exited $code after SIGTERM, not 75"
    grep -q "checkpoint 1 durable in file:///store" "$work/chroot1.log" || fail "chroot: no durable checkpoint"
    code=0
    chroot "$rootfs" env -i PATH=/usr/bin:/bin HOME=/root SPOTRUN_STORE=/store SPOTRUN_RUN_ID=ctr \
        spotrun run -- sh -c "$job" >"$work/chroot2.log" 2>&1 || code=$?
    cat "$work/chroot2.log"
    [ "$code" = 0 ] || fail "chroot: the resumed run exited $code"
    grep -q "^resumed at [1-9]" "$work/chroot2.log" || fail "chroot: the rerun did not resume"
    grep -q "^sum 45150$" "$work/chroot2.log" || fail "chroot: the resumed sum is not 1+...+300 = 45150"
    umount "$rootfs/proc"
    say "ok (chroot): installed from the .deb with apt-get into a Debian 12 root filesystem without build tools; stopped (75), resumed, exact"
    exit 0
}

# 1. the base image
if ! podman image exists "$base"; then
    say "building a Debian 12 root filesystem (mmdebstrap, $mirror)"
    mmdebstrap --variant=minbase bookworm "$work/rootfs.tar" "$mirror" >"$work/mmdebstrap.log" 2>&1 ||
        skip "mmdebstrap could not build a root filesystem (see $work/mmdebstrap.log)"
    podman import "$work/rootfs.tar" "$base" >/dev/null || chroot_test "podman import failed"
    rm -f "$work/rootfs.tar"
fi
podman run --rm --network host "$base" true >"$work/probe.log" 2>&1 ||
    chroot_test "podman run: $(tail -n1 "$work/probe.log")"
[ "${CONTAINER_TEST_CHROOT:-0}" = 0 ] || chroot_test "CONTAINER_TEST_CHROOT=1"
torchbase=localhost/spotrun-test-torch:base
if ! podman image exists "$torchbase"; then
    say "the user's PyTorch image: $base + python3-torch"
    printf 'FROM %s\nRUN apt-get update && apt-get install -y --no-install-recommends python3-torch && rm -rf /var/lib/apt/lists/*\n' \
        "$base" >"$work/Containerfile.torch"
    podman build --network host -f "$work/Containerfile.torch" -t "$torchbase" "$work" \
        >"$work/torch.log" 2>&1 || {
        tail -n 20 "$work/torch.log"
        fail "podman build of the PyTorch base image (log: $work/torch.log)"
    }
fi

# 2. the image, from the recipe users copy
say "building examples/container/Dockerfile FROM $torchbase"
podman build --network host --build-arg BASE="$torchbase" \
    --build-arg SPOTRUN_GIT_COMMIT="$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)" -f "$root/examples/container/Dockerfile" \
    -t "$image" "$root" >"$work/build.log" 2>&1 || {
    tail -n 30 "$work/build.log"
    fail "podman build of examples/container/Dockerfile (log: $work/build.log)"
}
podman run --rm --network host --entrypoint sh "$image" -c \
    '! command -v cc && ! command -v gcc && ! ls /usr/include/curl' >/dev/null 2>&1 ||
    fail "the final image holds a compiler or -dev headers: the install test proves nothing"
podman run --rm --network host --entrypoint spotrun "$image" --version | tee "$work/version"
grep -q "^shim: /usr/lib/libspotrun.so$" "$work/version" || fail "spotrun in the image finds no shim"

# 3-4. the demo's job: 300 steps, paced so that a stop lands mid-run.
train() { # NAME OUT [podman run options]: train.py in a new container, detached
    local name=$1 out=$2
    shift 2
    podman rm -f "$name" >/dev/null 2>&1 || true
    podman run -d --name "$name" --network host -e SPOTRUN_RUN_ID=demo \
        -v "$root/examples/pytorch/train.py:/opt/train.py:ro" -v "$work/out:/out" "$@" \
        "$image" /usr/bin/python3 /opt/train.py --steps 300 --pace 0.02 --save-every 0 --out "/out/$out" >/dev/null
}
# stop_resume STORE-DESCRIPTION DURABLE-IN [podman run options]
stop_resume() {
    local what=$1 durable=$2
    shift 2
    train "demo-$what-1" "$what.sha256" "$@"
    local i
    for i in $(seq 600); do
        podman logs "demo-$what-1" 2>&1 | grep -q "^step 100 " && break
        [ "$i" = 600 ] && fail "$what: the job never reached step 100"
        sleep 0.1
    done
    say "$what: podman stop -t 30 mid-run"
    podman stop -t 30 "demo-$what-1" >/dev/null
    local code
    code=$(podman inspect "demo-$what-1" --format '{{.State.ExitCode}}')
    podman logs "demo-$what-1" 2>&1 | grep -v "^step" >"$work/$what-1.log"
    cat "$work/$what-1.log"
    [ "$code" = 75 ] || fail "$what: the stopped container exited $code, not 75"
    # spotrun is the container's pid 1: its own TERM after the checkpoint
    # must end the job (the shim places a sender that is pid 1 too)
    ! grep -q "did not stop after SIGTERM" "$work/$what-1.log" ||
        fail "$what: the job outlived the wrapper's SIGTERM (spotrun as pid 1)"
    grep -q "checkpoint 1 durable in $durable" "$work/$what-1.log" || fail "$what: no durable checkpoint"
    [ ! -e "$work/out/$what.sha256" ] || fail "$what: the stopped job finished anyway"
    train "demo-$what-2" "$what.sha256" "$@"
    code=$(podman wait "demo-$what-2")
    podman logs "demo-$what-2" 2>&1 | grep -v "^step" >"$work/$what-2.log"
    cat "$work/$what-2.log"
    [ "$code" = 0 ] || fail "$what: the resumed container exited $code"
    grep -q "^resumed from step [1-9]" "$work/$what-2.log" || fail "$what: the second container did not resume"
    cmp -s "$work/out/ref.sha256" "$work/out/$what.sha256" ||
        fail "$what: the resumed weights differ from the uninterrupted run's"
    podman rm -f "demo-$what-1" "demo-$what-2" >/dev/null
    say "$what: stopped (75), resumed in a new container, weights exact"
}
rm -rf "$work/out" && mkdir -p "$work/out"
say "reference: the same job uninterrupted in the container"
podman run --rm --network host --entrypoint /usr/bin/python3 \
    -v "$root/examples/pytorch/train.py:/opt/train.py:ro" -v "$work/out:/out" \
    "$image" /opt/train.py --steps 300 --out /out/ref.sha256 >"$work/ref.log" 2>&1 ||
    fail "the uninterrupted run failed: $(tail -n 3 "$work/ref.log")"
[ -s "$work/out/ref.sha256" ] || fail "the uninterrupted run wrote no weights"

store=$work/store
rm -rf "$store" && mkdir -p "$store"
stop_resume local "file:///store" -e SPOTRUN_STORE=/store -v "$store:/store"
ls "$store"/demo/ckpt/*/MANIFEST.json >/dev/null || fail "local: no manifest in the host's store"

s3dir=$root/tests/s3
if [ -d "$s3dir/node_modules/@20minutes/s3rver" ] && command -v node >/dev/null; then
    rm -rf "$work/s3data" && mkdir -p "$work/s3data"
    node --openssl-legacy-provider "$s3dir/server.js" "$work/s3data" bkt >"$work/s3.log" 2>&1 &
    s3pid=$!
    trap 'kill $s3pid 2>/dev/null || true' EXIT
    for i in $(seq 100); do
        grep -q '^port ' "$work/s3.log" 2>/dev/null && break
        [ "$i" = 100 ] && fail "the S3 test server did not start: $(cat "$work/s3.log")"
        sleep 0.1
    done
    port=$(sed -n 's/^port //p' "$work/s3.log")
    stop_resume s3 "s3://bkt" -e SPOTRUN_STORE=s3://bkt -e AWS_ACCESS_KEY_ID=S3RVER \
        -e AWS_SECRET_ACCESS_KEY=S3RVER -e AWS_ENDPOINT_URL="http://127.0.0.1:$port" \
        -e AWS_REGION=us-east-1 -e AWS_EC2_METADATA_DISABLED=true
    ls "$work"/s3data/bkt/demo/ckpt/*/MANIFEST.json* >/dev/null 2>&1 ||
        find "$work/s3data" -path '*demo/ckpt/*MANIFEST*' | grep -q . ||
        fail "s3: no manifest on the host's S3 server"
    kill "$s3pid" 2>/dev/null || true
else
    say "the S3 case is skipped: the S3 test server is not installed (cd tests/s3 && npm ci)"
fi

# 5. the shell job
run() { # NAME: the job in a new container, detached
    podman rm -f "$1" >/dev/null 2>&1 || true
    podman run -d --name "$1" --network host -e SPOTRUN_STORE=/store -e SPOTRUN_RUN_ID=ctr \
        -v "$store:/store" "$image" sh -c "$job" >/dev/null
}
run ctr1
for _ in $(seq 600); do podman logs ctr1 2>&1 | grep -q "started sh" && break; sleep 0.1; done
podman logs ctr1 2>&1 | grep -q "started sh" ||
    fail "shell job: no \"started sh\" in the container's log after 60 s: $(podman logs ctr1 2>&1 | tail -n 5)"
sleep 3
podman stop -t 30 ctr1 >/dev/null
code=$(podman inspect ctr1 --format '{{.State.ExitCode}}')
podman logs ctr1 >"$work/ctr1.log" 2>&1
[ "$code" = 75 ] || fail "shell job: the stopped container exited $code, not 75 ($work/ctr1.log)"
grep -q "checkpoint 1 durable in file:///store" "$work/ctr1.log" || fail "shell job: no durable checkpoint"
run ctr2
code=$(podman wait ctr2)
podman logs ctr2 >"$work/ctr2.log" 2>&1
[ "$code" = 0 ] || fail "shell job: the resumed container exited $code"
grep -q "^resumed at [1-9]" "$work/ctr2.log" || fail "shell job: the second container did not resume"
grep -q "^sum 45150$" "$work/ctr2.log" || fail "shell job: the resumed sum is not 1+...+300 = 45150"
podman rm -f ctr1 ctr2 >/dev/null

# 6. the installed launcher: a 2-rank DDP job started by `python3 -m
# spotrun.launch` as the .deb installed it (no examples/, no PYTHONPATH),
# under spotrun, against the same script run by the launcher alone.
ddp() { # NAME: the DDP example, 40 steps, its weights' digest in /out/NAME
    podman run --rm --network host -e SPOTRUN_STORE=/store -v "$store:/store" \
        -v "$root/examples/pytorch:/opt/ex:ro" -v "$work/out:/out" \
        --entrypoint sh "$image" -c "$2 python3 -m spotrun.launch --nproc-per-node 2 \
        /opt/ex/train_ddp.py --steps 40 --save-every 10 --out /out/$1" >"$work/$1.log" 2>&1 ||
        fail "ddp $1: the launcher from the .deb failed: $(tail -n 3 "$work/$1.log")"
}
ddp ddp-plain ""
ddp ddp-spotrun "spotrun run --run-id ddp --"
grep -q "the job finished successfully" "$work/ddp-spotrun.log" ||
    fail "ddp: spotrun did not see the launched job finish ($work/ddp-spotrun.log)"
cmp -s "$work/out/ddp-plain" "$work/out/ddp-spotrun" ||
    fail "ddp: the weights under spotrun differ from the launcher's alone"
say "the installed launcher (python3 -m spotrun.launch from the .deb): 2 ranks, the same weights with and without spotrun"
say "ok: the user's PyTorch image + the recipe, installed from the .deb; the demo job and a shell job stopped (75) and resumed exactly, local store and S3; DDP through the installed launcher"
