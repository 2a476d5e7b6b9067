#!/bin/sh
# Ranks that lose their launcher's PMIx server end: two decode ranks run behind a shell
# wrapper (so the launcher's parent-death signal reaches the shells, not them), the
# launcher is killed with SIGKILL, and both ranks must say so and exit within seconds (the
# watchdog armed when the server's connection closes)
# instead of running on as orphans.
# usage: lost_server.sh HELIXRUN HELIX
set -u
helixrun=$1 helix=$2
dir=$(mktemp -d)
trap 'pkill -KILL -f "$dir/marker" 2>/dev/null; rm -rf "$dir"' EXIT
fail() { echo "lost_server: FAIL: $*"; for f in "$dir"/out.*; do echo "== $f"; cat "$f"; done; exit 1; }

# The marker argument names this test's processes for pgrep (and the cleanup above).
"$helixrun" -n 2 -- sh -c "\"$helix\" decode --kvp 2 --context 16K --steps 100000 \
    --timeline $dir/marker >$dir/out.\$HELIX_RANK 2>&1; true" >"$dir/launcher.log" 2>&1 &
launcher=$!
# both ranks started (their output is block-buffered in the files: wait, then kill)
i=0
while [ "$(pgrep -f -- "helix decode --kvp 2 --context 16K --steps 100000 --timeline $dir/marker" | wc -l)" -lt 2 ]; do
    i=$((i + 1))
    [ $i -le 300 ] || fail "the ranks did not start within 30 s"
    sleep 0.1
done
sleep 2
kill -KILL $(pgrep -P "$launcher" -x helixrun-keeper) "$launcher"
i=0
while pgrep -f -- "helix decode --kvp 2 --context 16K --steps 100000 --timeline $dir/marker" >/dev/null; do
    i=$((i + 1))
    [ $i -le 100 ] || fail "ranks still running 10 s after the launcher was killed"
    sleep 0.1
done
for r in 0 1; do
    grep -q "signal after its PMIx server closed the connection" "$dir/out.$r" ||
        fail "rank $r did not say why it ended"
done
echo "lost_server: both ranks ended $(echo "$i / 10" | bc -l | cut -c1-4) s after the launcher"
