#!/bin/sh
# cli/build_id.sh: a clean tree's id is git describe alone; uncommitted changes add
# "-dirty-" and a hash of them, different for different changes and gone once they are
# undone; outside a git tree it fails (vcs_tag then takes the project version).
# usage: build_id.sh BUILD_ID_SCRIPT
script=$1
command -v git >/dev/null 2>&1 || { echo "no git: skipped"; exit 77; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fails=0
check() { # WHAT CONDITION...
    what=$1
    shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
git -C "$d" init -q && git -C "$d" -c user.email=t@t -c user.name=t commit -q --allow-empty \
    -m base || exit 1
echo one >"$d/f" && git -C "$d" add f &&
    git -C "$d" -c user.email=t@t -c user.name=t commit -q -m one || exit 1
clean=$(sh "$script" "$d")
check "clean tree: describe only ($clean)" test "$clean" = "$(git -C "$d" describe --always --abbrev=12)"
echo two >"$d/f"
a=$(sh "$script" "$d")
echo three >"$d/f"
b=$(sh "$script" "$d")
dirty_form() { expr "$1" : "$clean-dirty-[0-9a-f]\{8\}\$" >/dev/null; }
check "changed tree: -dirty- and a hash ($a)" dirty_form "$a"
check "other changes, other id ($a, $b)" test "$a" != "$b"
echo one >"$d/f"
check "changes undone: the clean id again" test "$(sh "$script" "$d")" = "$clean"
check "not a git tree: fails" sh -c "! sh '$script' /proc >/dev/null 2>&1"
[ "$fails" -eq 0 ]
