#!/usr/bin/env bash
# Starts rank 1 with a different --steps than the others: every rank must refuse at init
# naming the field and both values. usage: mismatch.sh HELIX
rank=${PMIX_RANK:-${OMPI_COMM_WORLD_RANK:-0}}
steps=4
[ "$rank" = 1 ] && steps=5
exec "$1" decode --kvp 2 --steps "$steps" --context 64 --timeout 20
