#!/bin/sh
# The build id of a source tree (cli/meson.build runs it through vcs_tag at every build):
# git describe of HEAD, and for a tree with uncommitted changes "-dirty-" and a hash of
# those changes, so that two builds of different working states never share an id (the hw
# file records it, and decode's prediction says when the file came from another build).
# usage: build_id.sh SRC_DIR; exit 1 (vcs_tag then takes the project version) without git.
src=$1
id=$(git -C "$src" describe --always --abbrev=12 2>/dev/null) || exit 1
if ! git -C "$src" diff --quiet HEAD -- 2>/dev/null; then
    h=$(git -C "$src" diff HEAD -- | sha1sum | cut -c1-8)
    id="$id-dirty-$h"
fi
printf '%s\n' "$id"
