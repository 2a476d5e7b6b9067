#!/usr/bin/env bash
# Starts rank 1 differently from the others; every rank must refuse at init naming what
# differs. usage: mismatch.sh steps|comm|ucxseg|ep|wdtype HELIX [MODEL]
# steps: rank 1 gets another --steps; comm: rank 1 another HELIX_COMM_ALLREDUCE_SMALL;
# ucxseg: rank 1 sets UCX_TCP_RX_SEG_SIZE (its peers send HELIX_COMM_TCP_SEG's segments);
# ep: rank 1 another HELIX_EP (an MoE MODEL must be given); wdtype: rank 1 holds the
# weights in bf16 (--weight-dtype), the others as the model says (the default model, tiny,
# holds f32; a MODEL given must hold f32 too).
rank=${PMIX_RANK:-${OMPI_COMM_WORLD_RANK:-0}}
steps=4 extra=
if [ "$rank" = 1 ]; then
    case $1 in
    steps) steps=5 ;;
    comm)  export HELIX_COMM_ALLREDUCE_SMALL=64 ;;
    ucxseg) export UCX_TCP_RX_SEG_SIZE=64K ;;
    ep)    export HELIX_EP=2 ;;
    wdtype) extra=--weight-dtype=bf16 ;;
    esac
fi
exec "$2" decode --kvp 2 --steps "$steps" --context 64 --timeout 20 ${3:+--model "$3"} $extra
