#!/bin/sh
# Installs the Debian 12 packages Helix builds and tests against; prints the apt line when not root.
set -eu
PKGS="meson ninja-build pkg-config gcc make libucx-dev ucx-utils libpmix-dev libpmix-bin \
libhwloc-dev hwloc libjansson-dev libcmocka-dev libopenblas-dev openmpi-bin libopenmpi-dev \
iproute2 procps slurmd slurmctld slurm-client slurm-wlm-basic-plugins munge jq clang bc"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "helix: missing Debian packages. Run as root:" >&2
    echo "  apt-get install -y --no-install-recommends$missing" >&2
    exit 1
fi
echo "helix: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends $missing >/dev/null 2>&1 || {
    apt-get update >/dev/null && apt-get install -y --no-install-recommends $missing
}
