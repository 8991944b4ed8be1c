# storelib.sh - one e2e case on every store backend (tests/README.md,
# "Running a case on every store backend"), sourced after lib.sh.
#
# A family that runs on several backends keeps its cases in one body,
# tests/e2e/<family>-body.sh, and has one thin script per backend that
# names the backend and sources the body:
#
#     . "$(dirname "$0")/lib.sh"
#     . "$SRCDIR/tests/e2e/storelib.sh"
#     store_start s3
#     . "$SRCDIR/tests/e2e/lease-body.sh"
#     test_done
#
# store_start BACKEND: sets STORE_BACKEND and points SPOTRUN_STORE at
#   file  lib.sh's own store, $TRASH/store (nothing to start);
#   s3    the S3 test server with conditional writes (s3lib.sh,
#         S3_CONDITIONAL=1 s3_start); Ceph RGW instead under
#         SPOTRUN_TEST_S3=rgw (the e2e-rgw/* ctest entries);
#   az    Azurite (azlib.sh, az_start).
# A server it starts stops when the script exits; a body that sets an EXIT
# trap of its own calls store_stop from it.
#
# What a body uses instead of asking the backend itself:
#   store_has KEY         the store holds KEY (a key under the run's prefix)
#   store_cat KEY         KEY's bytes on stdout; fails when it is missing
#   store_dump DIR        a copy of the whole store in DIR (file and s3)
#   store_only BACKEND... 'why'
#                         on any other backend: prints that the next case is
#                         skipped and why, and succeeds (use:
#                         store_only az 'why' || test_expect_success ...)

store_start() {
    STORE_BACKEND=$1
    case $1 in
    file) ;;
    s3)
        . "$SRCDIR/tests/e2e/s3lib.sh"
        S3_CONDITIONAL=1 s3_start
        ;;
    az)
        . "$SRCDIR/tests/e2e/azlib.sh"
        az_start
        ;;
    *)
        say "store_start: unknown backend '$1' (file, s3, az)"
        exit 1
        ;;
    esac
}

store_stop() {
    case $STORE_BACKEND in
    s3) s3_stop ;;
    az) az_stop ;;
    esac
    return 0
}

store_has() {
    case $STORE_BACKEND in
    file) test -e "$SPOTRUN_STORE/$1" ;;
    s3) test "$(s3curl -o /dev/null -w "%{http_code}" -I "$S3_URL/bkt/$test_name/$1")" = 200 ;;
    az) azreq HEAD "/ckpt/$test_name/$1" >/dev/null ;;
    esac
}

store_cat() {
    case $STORE_BACKEND in
    file) cat "$SPOTRUN_STORE/$1" ;;
    s3) s3curl -f "$S3_URL/bkt/$test_name/$1" ;;
    az) azreq GET "/ckpt/$test_name/$1" >"$TRASH/store_cat.out" && tail -n +2 "$TRASH/store_cat.out" ;;
    esac
}

store_dump() {
    case $STORE_BACKEND in
    file) cp -r "$SPOTRUN_STORE" "$1" ;;
    s3) awscli s3 cp --recursive --quiet "s3://bkt/$test_name/" "$1/" ;;
    *)
        say "store_dump: not on $STORE_BACKEND"
        return 1
        ;;
    esac
}

store_only() {
    local why b
    why=${*: -1}
    for b in "${@:1:$#-1}"; do
        [ "$b" = "$STORE_BACKEND" ] && return 1
    done
    test_count=$((test_count + 1))
    say "ok $test_count # skip on the $STORE_BACKEND store: $why"
}
