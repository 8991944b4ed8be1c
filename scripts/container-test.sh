#!/usr/bin/env bash
# container-test.sh - spotrun in a real container runtime, installed from its
# .deb into an image that never built it (examples/container/Dockerfile):
#   1. a Debian 12 root filesystem from the Debian registry (mmdebstrap),
#      imported as the base image;
#   2. the Dockerfile built FROM it with podman: a builder stage compiles
#      spotrun and packs the .deb, the final stage (no compiler, no -dev
#      package) installs it with apt-get: the proof that the package's
#      dependencies are complete;
#   3. a job in the container, its store a host directory mounted in:
#      `podman stop -t 30` mid-run gives a durable checkpoint and exit 75;
#      `podman run` again resumes it; the result equals an uninterrupted
#      run's.
# Needs root (podman, mmdebstrap; installed when missing). When the
# runtime cannot run a container here it says which step failed and why,
# and exits 0 (skipped); once a container runs, every failure is a failure.
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

# 1. the base image
if ! podman image exists "$base"; then
    say "building a Debian 12 root filesystem (mmdebstrap, $mirror)"
    mmdebstrap --variant=minbase bookworm "$work/rootfs.tar" "$mirror" >"$work/mmdebstrap.log" 2>&1 ||
        skip "mmdebstrap could not build a root filesystem (see $work/mmdebstrap.log)"
    podman import "$work/rootfs.tar" "$base" >/dev/null || skip "podman import failed"
    rm -f "$work/rootfs.tar"
fi
podman run --rm --network host "$base" true >"$work/probe.log" 2>&1 ||
    skip "podman cannot run a container here: $(tail -n1 "$work/probe.log")"

# 2. the image, from the recipe users copy
say "building examples/container/Dockerfile FROM $base"
podman build --network host --build-arg BASE="$base" \
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

# 3. a job: sums 1..300, one step per 50 ms; commits its state when asked.
job='s=0; i=0
if [ -f "$SPOTRUN_CKPT_DIR/state" ]; then read i s <"$SPOTRUN_CKPT_DIR/state"; echo "resumed at $i"; fi
trap "echo \$i \$s >\"\$SPOTRUN_CKPT_DIR/state\"; spotrun commit --step \$i" USR1
while [ $i -lt 300 ]; do i=$((i + 1)); s=$((s + i)); sleep 0.05; done
echo "sum $s"'
store=$work/store
rm -rf "$store" && mkdir -p "$store"
run() { # NAME: the job in a new container, detached
    podman rm -f "$1" >/dev/null 2>&1 || true
    podman run -d --name "$1" --network host -e SPOTRUN_STORE=/store -e SPOTRUN_RUN_ID=ctr \
        -v "$store:/store" "$image" sh -c "$job" >/dev/null
}
run ctr1
for _ in $(seq 100); do podman logs ctr1 2>&1 | grep -q "started sh" && break; sleep 0.1; done
sleep 3
say "podman stop -t 30 mid-run"
podman stop -t 30 ctr1 >/dev/null
code=$(podman inspect ctr1 --format '{{.State.ExitCode}}')
podman logs ctr1 >"$work/ctr1.log" 2>&1
cat "$work/ctr1.log"
[ "$code" = 75 ] || fail "the stopped container exited $code, not 75"
grep -q "checkpoint 1 durable in file:///store" "$work/ctr1.log" || fail "no durable checkpoint"
ls "$store"/ctr/ckpt/*/MANIFEST.json >/dev/null || fail "no manifest in the host's store"

run ctr2
code=$(podman wait ctr2)
podman logs ctr2 >"$work/ctr2.log" 2>&1
cat "$work/ctr2.log"
[ "$code" = 0 ] || fail "the resumed container exited $code"
grep -q "^resumed at [1-9]" "$work/ctr2.log" || fail "the second container did not resume"
grep -q "^sum 45150$" "$work/ctr2.log" || fail "the resumed run's sum is not 1+...+300 = 45150"
podman rm -f ctr1 ctr2 >/dev/null
say "ok: built from the recipe, installed from the .deb, stopped (75), resumed, exact"
