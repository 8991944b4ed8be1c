#!/usr/bin/env bash
# deps.sh - installs the Debian packages spotrun needs to build, test and
# run its demo, when they are missing. Idempotent; needs root (or sudo).
set -euo pipefail

packages=(
    cmake gcc make pkg-config           # toolchain
    libcurl4-openssl-dev libzstd-dev libarchive-dev libjansson-dev libxxhash-dev
    libcmocka-dev                       # unit tests
    libxml2-dev libssl-dev              # S3 backend: XML answers, Content-MD5
    awscli curl                         # S3 tests: interop with the AWS CLI, setup
    zstd tar xxhash                     # interop tests use the stock tools
    python3 python3-torch               # the PyTorch example (CPU)
    python3-optuna                      # t0930, scripts/bench-search.sh: model-based search
    python3-matplotlib python3-sklearn  # t0982: Optuna's plots of an exported sweep (importances: sklearn)
    python3-pip                         # t0705: pip install ./python (offline, in-tree backend)
    time                                # peak RSS in scripts/bench-codec.sh
    slurm-wlm munge                     # the Slurm test (t0330) runs a real single-node cluster
    clang libclang-rt-14-dev            # libFuzzer targets (scripts/fuzz.sh), the clang build (scripts/test.sh)
    clang-format                        # scripts/check-format.sh
    valgrind                            # scripts/check-threads-memory.sh
    scdoc                               # the man page spotrun(1)
    librsvg2-bin libxml2-utils          # report tests: render and validate the SVG
    dpkg-dev binutils                   # t0007: cpack's .deb (dpkg-shlibdeps), readelf/objdump
    lintian                             # t0007: Debian's checker on that .deb
    prometheus                          # t0778: promtool check metrics on stats --format openmetrics
    chromium                            # t0787: the fleet page (report --fleet) in a headless browser
    zsh                                 # t0008: the zsh completion
    ceph-mon ceph-osd radosgw ceph-common # e2e-rgw/*: a one-node Ceph RGW (tests/e2e/lib-rgw.sh)
)
# The S3 tests' server runs on Node (npm installs it): Debian's packages
# only when no node/npm is there (a NodeSource nodejs bundles npm, and
# Debian's npm would conflict with it).
command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
