# lib-rgw.sh - a one-node Ceph cluster with the RADOS Gateway (RGW, Ceph's
# S3 server) on loopback, for the e2e-rgw/* tests and scripts/rgw.sh.
# Sourced; needs Debian's ceph-mon, ceph-osd, radosgw (scripts/deps.sh).
#
# rgw_start DIR: a monitor (no auth, msgr v1 on a free port), one memstore
# OSD (in memory, 2 GiB), no mgr, RGW's beast frontend on a free port, a
# user with the keys RGW_KEY_ID / RGW_SECRET; every file (conf, data,
# logs, sockets, pids) under DIR. Writes DIR/env (RGW_URL=..., sourceable)
# and returns once RGW answers S3. rgw_stop DIR: stops the daemons (their
# pid files) and waits for them. Nothing is left running or outside DIR.

RGW_KEY_ID=RGWTESTKEY
RGW_SECRET=RGWTESTSECRET

# A TCP port nothing listens on (the kernel picks one).
rgw_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

rgw_have() {
    command -v ceph-mon >/dev/null && command -v ceph-osd >/dev/null &&
        command -v radosgw >/dev/null && command -v radosgw-admin >/dev/null
}

rgw_conf() { # DIR MONPORT RGWPORT
    local d=$1
    cat <<CONF
[global]
fsid = $(cat "$d/fsid")
mon host = v1:127.0.0.1:$2
ms bind msgr2 = false
auth cluster required = none
auth service required = none
auth client required = none
run dir = $d/run
log file = $d/log/\$name.log
admin socket = $d/run/\$name.asok
pid file = $d/run/\$name.pid
osd objectstore = memstore
memstore device bytes = 2147483648
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
mon allow pool size one = true
mon warn on pool no redundancy = false
osd crush chooseleaf type = 0
mon data = $d/mon/\$name
osd data = $d/osd/\$name
osd journal size = 0
# The OSD does not ask the monitor to place it in the CRUSH map at its start
# (it may ask before it has the cluster's fsid and get "wrong fsid": seen
# under load); rgw_start places it with the CLI instead, and retries each
# CLI command (the CLI can be refused the same way: "problem getting
# command descriptions"). The OSD's uuid is the cluster's fsid, so that
# "osd create" is idempotent.
osd crush update on start = false
osd class update on start = false
keyring = $d/keyring
[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:$3
rgw dns name = 127.0.0.1
rgw thread pool size = 32
# Listings page at 50 keys rather than 1,000 (spotrun names max-keys, which
# RGW bounds by this): t0200 pages through 60 keys there, not 1,100 (1,100
# PUTs and listings beside them take RGW here ~150 s).
rgw max listing results = 50
CONF
}

# rgw_wait DIR WHAT CMD...: polls CMD until it succeeds (~90 s bound).
rgw_wait() {
    local d=$1 what=$2 i=0
    shift 2
    until "$@" >/dev/null 2>&1; do
        i=$((i + 1))
        if [ "$i" -gt 900 ]; then
            echo "rgw: $what did not come up in 90 s (logs in $d/log)" >&2
            return 1
        fi
        sleep 0.1
    done
}

# Starts the OSD. Now and then ceph-osd asks the monitor before it has the
# cluster's fsid ("mon_cmd_maybe_osd_create fail: 'wrong fsid'") and exits:
# it is started again, up to 5 tries.
rgw_osd() {
    local d=$1 i
    for i in 1 2 3 4 5; do
        ceph-osd -c "$d/ceph.conf" -i 0 && return 0
        echo "rgw: ceph-osd exited (try $i); starting it again"
        sleep 1
    done
    return 1
}

rgw_start() {
    local d=$1 mport rport
    if ! rgw_have; then
        echo "rgw: ceph-mon, ceph-osd or radosgw is not installed (run scripts/deps.sh)" >&2
        return 1
    fi
    mkdir -p "$d/run" "$d/log" "$d/mon" "$d/osd/osd.0"
    mport=$(rgw_free_port)
    rport=$(rgw_free_port)
    python3 -c 'import uuid; print(uuid.uuid4())' >"$d/fsid"
    rgw_conf "$d" "$mport" "$rport" >"$d/ceph.conf"
    # A monitor port other than 6789 is msgr v2 unless named v1 (--addv).
    local c=(-c "$d/ceph.conf")
    monmaptool --create --addv a "[v1:127.0.0.1:$mport]" --fsid "$(cat "$d/fsid")" "$d/monmap" \
        >"$d/log/setup.log" 2>&1 &&
        ceph-mon "${c[@]}" --mkfs -i a --monmap "$d/monmap" >>"$d/log/setup.log" 2>&1 &&
        ceph-mon "${c[@]}" -i a >>"$d/log/setup.log" 2>&1 &&
        rgw_wait "$d" "osd.0 in the OSD map" ceph "${c[@]}" --connect-timeout 60 \
            osd create "$(cat "$d/fsid")" 0 &&
        ceph-osd "${c[@]}" -i 0 --mkfs --osd-uuid "$(cat "$d/fsid")" >>"$d/log/setup.log" 2>&1 &&
        rgw_osd "$d" >>"$d/log/setup.log" 2>&1 &&
        rgw_wait "$d" "osd.0 in the CRUSH map" ceph "${c[@]}" --connect-timeout 60 \
            osd crush create-or-move osd.0 1.0 root=default host=rgw &&
        radosgw "${c[@]}" -n client.rgw.a >>"$d/log/setup.log" 2>&1 || {
        echo "rgw: starting the cluster failed:" >&2
        tail -20 "$d/log/setup.log" >&2
        return 1
    }
    echo "RGW_URL=http://127.0.0.1:$rport" >"$d/env.tmp"
    rgw_wait "$d" "the user" radosgw-admin "${c[@]}" user create --uid=spotrun \
        --display-name=spotrun --access-key="$RGW_KEY_ID" --secret="$RGW_SECRET" || return 1
    rgw_wait "$d" "RGW's S3 endpoint" curl -sSf -o /dev/null "http://127.0.0.1:$rport/" || return 1
    mv "$d/env.tmp" "$d/env"
}

rgw_stop() {
    local d=$1 f pid i
    for f in "$d"/run/client.rgw.a.pid "$d"/run/osd.0.pid "$d"/run/mon.a.pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        kill "$pid" 2>/dev/null || continue
        i=0
        while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 300 ]; do
            sleep 0.1
            i=$((i + 1))
        done
        kill -9 "$pid" 2>/dev/null
        rm -f "$f"
    done
    rm -f "$d/env"
}
