#!/bin/sh
# The helix commands given bad input as a hostile user would: each case must exit with the
# stated code and say what is wrong exactly once (one stderr line naming the file, flag or
# variable). $1: the helix binary, $2: the source tree.
helix=$1
src=$2
topo=$src/tests/data/topology
tmp=$(mktemp -d /tmp/hlx_cli_inputs_XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fails=0

# expect CODE PATTERN LINES -- command...: exit CODE, PATTERN on stderr, LINES stderr lines
# mentioning the pattern (0: do not count)
expect() {
    code=$1; pat=$2; lines=$3; shift 4
    timeout 60 env -u HELIX_TOPO_FILE -u HELIX_DEBUG -u HELIX_DEBUG_SUBSYS "$@" \
        >"$tmp/out" 2>"$tmp/err"
    rc=$?
    n=$(grep -c -F -- "$pat" "$tmp/err")
    if [ "$rc" != "$code" ] || [ "$n" -lt 1 ] || { [ "$lines" != 0 ] && [ "$n" != "$lines" ]; }; then
        echo "FAIL: $*: exit $rc (want $code), '$pat' on $n stderr line(s) (want ${lines}):"
        sed 's/^/    /' "$tmp/err" | head -20
        fails=$((fails + 1))
    else
        echo "ok: $* -> $rc"
    fi
}

# quiet CODE -- command...: exit CODE with nothing on stderr
quiet() {
    code=$1; shift 2
    timeout 60 env -u HELIX_TOPO_FILE -u HELIX_DEBUG -u HELIX_DEBUG_SUBSYS "$@" \
        >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" != "$code" ] || [ -s "$tmp/err" ]; then
        echo "FAIL: $*: exit $rc (want $code), stderr (want none):"
        sed 's/^/    /' "$tmp/err" | head -20
        fails=$((fails + 1))
    else
        echo "ok: $* -> $rc, quiet"
    fi
}

mkdir "$tmp/dir"
: >"$tmp/empty.json"
printf '{"name": "x", "name": "y"}' >"$tmp/dup.json"

# directories, missing files, empty files
expect 2 "$tmp/dir: is a directory, not a topology file" 1 -- "$helix" topo --topo "$tmp/dir"
expect 2 "$tmp/dir: is a directory, not a model file" 1 -- "$helix" decode --model "$tmp/dir"
expect 2 "$tmp/dir: is a directory, not a JSON file" 1 -- "$helix" topo --cluster "$tmp/dir"
expect 2 "/nonexistent/t.xml: no such topology file (HELIX_TOPO_FILE)" 1 -- \
    env HELIX_TOPO_FILE=/nonexistent/t.xml "$helix" decode --steps 1
expect 2 "/nonexistent/t.xml: no such topology file" 1 -- "$helix" topo --topo /nonexistent/t.xml
expect 2 "/nonexistent/m.json: no such model file" 1 -- "$helix" decode --model /nonexistent/m.json
expect 2 "empty.json:1:1: empty file" 1 -- "$helix" decode --model "$tmp/empty.json"
expect 2 "dup.json:1:" 1 -- "$helix" decode --model "$tmp/dup.json"
expect 2 "empty file" 1 -- "$helix" topo --topo "$tmp/empty.json"
expect 2 "$tmp/dir: cannot write the topology: is a directory" 1 -- \
    "$helix" topo --topo "$topo/hgx8.xml" --dump "$tmp/dir"
# a dump that fails part way (past ulimit -f) leaves an existing file as it was and no
# temporary beside it, where hwloc's export had truncated it to what it wrote
echo keep >"$tmp/keep.xml"
expect 1 "keep.xml: cannot write the topology: File too large" 1 -- sh -c "trap '' XFSZ; ulimit -f 4; \
    exec \"$helix\" topo --topo \"$topo/hgx8.xml\" --dump \"$tmp/keep.xml\""
if [ "$(cat "$tmp/keep.xml")" != keep ] || ls -A "$tmp" | grep -q '^\.keep'; then
    echo "FAIL: a failed --dump changed keep.xml or left a temporary file"
    fails=$((fails + 1))
fi
expect 2 "/dev/zero: larger than 256 MiB" 1 -- "$helix" topo --topo /dev/zero
# a pipe whose writer holds it open and never writes: refused after HELIX_INPUT_TIMEOUT
# (exit 1: the input was not bad, its writer stalled), where the read used to wait forever;
# plan's and sweep's --hw say it with the same 1 (they took every read failure for a 2)
mkfifo "$tmp/stall"
for cmd in "decode --steps 1 --model" "topo --topo" "plan --hw gb200-nvl72 --context 1K --model" \
           "generate --prompt-ids" "plan --model tiny --context 1K --hw" \
           "sweep --model tiny --context 1K --hw"; do
    sleep 30 >"$tmp/stall" &
    stall=$!
    # shellcheck disable=SC2086
    expect 1 "stall: no data for 0.5 s after 0 byte(s): is whatever writes this pipe stalled?" 1 \
        -- env HELIX_INPUT_TIMEOUT=0.5 "$helix" $cmd "$tmp/stall"
    kill "$stall" 2>/dev/null
    wait "$stall" 2>/dev/null
done
# HELIX_CLUSTER on a stalled pipe: the same 1 (the engine took every load failure for a 2)
sleep 30 >"$tmp/stall" &
stall=$!
expect 1 "HELIX_CLUSTER=$tmp/stall: $tmp/stall: no data for 0.5 s" 1 -- \
    env HELIX_INPUT_TIMEOUT=0.5 HELIX_CLUSTER="$tmp/stall" "$helix" decode --steps 1
kill "$stall" 2>/dev/null
wait "$stall" 2>/dev/null
# helix info takes no option: an unknown one is said to be one
expect 2 "helix info: unknown option '--json' (helix info takes none" 1 -- "$helix" info --json
expect 2 "HELIX_INPUT_TIMEOUT: '0' is outside [0.001, 86400]" 1 -- \
    env HELIX_INPUT_TIMEOUT=0 "$helix" topo --topo "$topo/hgx8.xml"

# plan --hw local without a hw file where none can be stored: refused (2) before measuring,
# as helix bench local refuses it, where it said "measuring this machine" and exited 1
expect 2 "--hw local: no hw file, and none can be stored: $tmp/empty.json/hw.json: cannot create a file there: Not a directory" 1 -- \
    env HELIX_HW_FILE="$tmp/empty.json/hw.json" "$helix" plan --model tiny --hw local --context 1K
quiet 2 -- sh -c "HELIX_HW_FILE=\"$tmp/empty.json/hw.json\" \"$helix\" plan --model tiny --hw local --context 1K 2>&1 | grep -q measuring && echo measured >&2; exit 2"

# standard output that cannot be written (a full disk): exit 1 naming it, where the commands
# ended with 0 over an empty or truncated result; bad input keeps its 2
full="writing the standard output failed: No space left on device (the output is incomplete)"
expect 1 "helix plan: $full" 1 -- sh -c "\"$helix\" plan --model tiny --hw gb200-nvl72 --context 1K --json >/dev/full"
expect 1 "helix topo: $full" 1 -- sh -c "\"$helix\" topo --topo \"$topo/hgx8.xml\" --json >/dev/full"
# (info's output is long: glibc may have met the error at an earlier flush, whose errno is
# gone by the last one; the failure is named either way)
expect 1 "helix info: writing the standard output failed" 1 -- sh -c "\"$helix\" info >/dev/full"
expect 1 "helix decode: writing the standard output failed" 1 -- \
    sh -c "\"$helix\" decode --steps 1 --context 16 --json >/dev/full"
expect 2 "--context are required" 1 -- sh -c "\"$helix\" plan --model tiny --hw gb200-nvl72 >/dev/full"

# settings: one line per bad value, no wrapper, refused before the command runs
expect 2 "helix decode: HELIX_COMM_TIMEOUT: 'abc' is not a finite decimal number" 1 -- \
    env HELIX_COMM_TIMEOUT=abc "$helix" decode --steps 1
# before a rank exists the command names itself, alone or under helixrun; under mpirun or
# srun (nothing prefixes a rank's lines there) the host:pid:rank prefix stays
expect 2 "helix decode: HELIX_COMM_TIMEOUT: 'abc'" 1 -- \
    env PMIX_RANK=0 HELIXRUN=1 HELIX_COMM_TIMEOUT=abc "$helix" decode --steps 1
for v in PMIX_RANK SLURM_PROCID OMPI_COMM_WORLD_RANK; do
    expect 2 "helix $(hostname):" 1 -- env -u HELIXRUN $v=0 HELIX_COMM_TIMEOUT=abc "$helix" decode --steps 1
done
expect 2 "HELIX_COMM_TIMEOUT: 'nan'" 1 -- env HELIX_COMM_TIMEOUT=nan "$helix" topo --topo "$topo/hgx8.xml"
expect 2 "HELIX_TOPO_THISSYSTEM: '2' is outside [0, 1]" 1 -- \
    env HELIX_TOPO_THISSYSTEM=2 "$helix" topo --topo "$topo/hgx8.xml"
expect 2 "HELIX_COMM_ALLREDUCE_SMALL: '8G' (8589934592) is outside" 1 -- \
    env HELIX_COMM_ALLREDUCE_SMALL=8G "$helix" decode --steps 1
# two bad values of one table: both named in one run
expect 2 "HELIX_COMM_BACKEND: longer than 255" 1 -- env HELIX_COMM_TIMEOUT=x \
    HELIX_COMM_BACKEND="$(printf '%0300d' 0)" "$helix" decode --steps 1
expect 2 "HELIX_COMM_TIMEOUT: 'x'" 1 -- env HELIX_COMM_TIMEOUT=x \
    HELIX_COMM_BACKEND="$(printf '%0300d' 0)" "$helix" decode --steps 1
expect 2 "HELIX_KERNELS: 'avx3' is not one of auto|scalar|" 1 -- env HELIX_KERNELS=avx3 "$helix" decode --steps 1
expect 0 "(env, INVALID: 'abc' is not a finite decimal number)" 1 -- \
    env HELIX_COMM_TIMEOUT=abc sh -c "\"$helix\" info >&2"
expect 0 "HELIX_COMM_ALLREDUCE_SMALL   65536" 0 -- env HELIX_COMM_ALLREDUCE_SMALL=64K sh -c "\"$helix\" info >&2"
# string settings with a fixed set of values: marked INVALID by info, refused by decode
expect 0 "(env, INVALID: 'junk' is not one of auto|on|off" 1 -- \
    env HELIX_BIND=junk sh -c "\"$helix\" info >&2"
expect 2 "HELIX_DEVICE: 'tpu' is not one of cpu|cuda|auto" 1 -- env HELIX_DEVICE=tpu "$helix" decode --steps 1
expect 2 "HELIX_COMM_UCX_ERR_MODE: 'fast' is not one of none|peer" 1 -- \
    env HELIX_COMM_UCX_ERR_MODE=fast "$helix" decode --steps 1
# a rule between two settings of one table (each valid alone): refused at start-up, once,
# before any communicator exists; info marks the pair
expect 2 "HELIX_HEARTBEAT_TIMEOUT=1 s must be at least twice HELIX_HEARTBEAT_INTERVAL=1 s" 1 -- \
    env HELIX_HEARTBEAT_TIMEOUT=1 "$helix" decode --steps 1
expect 0 "INVALID together: HELIX_COMM_CHUNK_SHM=100" 1 -- \
    env HELIX_COMM_CHUNK_SHM=100 sh -c "\"$helix\" info >&2"
expect 2 "HELIX_COMM_TCP_SEG=100: 0 (UCX's own) or at least 4096 bytes" 1 -- \
    env HELIX_COMM_TCP_SEG=100 "$helix" decode --steps 1
expect 2 "HELIX_COMM_TCP_SEG: '8M' (8388608) is outside [0, 4194304]" 1 -- \
    env HELIX_COMM_TCP_SEG=8M "$helix" decode --steps 1
# a tcp chunk goes eager in one segment, with UCX's 8-byte tag header: a chunk set one byte
# over the limit is refused, as is HELIX_COMM_CHUNK_NET where it is the smaller (so the tcp
# peers' limit); the limit itself, 0 and auto (the default, following the segment) are not;
# where UCX's own variable sets the segment, UCX's value wins (no refusal here)
quiet 0 -- env HELIX_COMM_TCP_SEG=65536 "$helix" decode --steps 1
quiet 0 -- env HELIX_COMM_TCP_SEG=4100 "$helix" decode --steps 1
expect 2 "HELIX_COMM_CHUNK_NET=131072 (smaller than HELIX_COMM_CHUNK_TCP=262144, so the tcp peers' limit) does not fit one HELIX_COMM_TCP_SEG=65536 segment" 1 -- \
    env HELIX_COMM_TCP_SEG=65536 HELIX_COMM_CHUNK_NET=131072 HELIX_COMM_CHUNK_TCP=262144 \
    "$helix" decode --steps 1
expect 2 "HELIX_COMM_CHUNK_TCP=8192 does not fit one HELIX_COMM_TCP_SEG=4100 segment less UCX's 8-byte tag header, nor does any chunk" 1 -- \
    env HELIX_COMM_TCP_SEG=4100 HELIX_COMM_CHUNK_TCP=8192 "$helix" decode --steps 1
expect 2 "HELIX_COMM_CHUNK_TCP: 'bogus' is not one of auto" 1 -- \
    env HELIX_COMM_CHUNK_TCP=bogus "$helix" decode --steps 1
expect 2 "HELIX_COMM_CHUNK_TCP=65529 does not fit one HELIX_COMM_TCP_SEG=65536 segment" 1 -- \
    env HELIX_COMM_TCP_SEG=65536 HELIX_COMM_CHUNK_TCP=65529 "$helix" topo --topo "$topo/hgx8.xml"
quiet 0 -- env HELIX_COMM_TCP_SEG=65536 HELIX_COMM_CHUNK_TCP=65528 "$helix" topo --topo "$topo/hgx8.xml"
quiet 0 -- env HELIX_COMM_TCP_SEG=65536 HELIX_COMM_CHUNK_TCP=0 "$helix" topo --topo "$topo/hgx8.xml"
quiet 0 -- env HELIX_COMM_TCP_SEG=65536 UCX_TCP_TX_SEG_SIZE=256K UCX_TCP_RX_SEG_SIZE=256K \
    "$helix" topo --topo "$topo/hgx8.xml"
# UCX's tcp segment variables are read as UCX reads memory units: what UCX cannot read is
# refused at start-up naming the variable; its spellings of one size are accepted
expect 2 "UCX_TCP_TX_SEG_SIZE='64Q': not a size UCX reads" 1 -- \
    env UCX_TCP_TX_SEG_SIZE=64Q "$helix" decode --steps 1
expect 2 "UCX_TCP_RX_SEG_SIZE='1.5M': not a size UCX reads" 1 -- \
    env UCX_TCP_RX_SEG_SIZE=1.5M "$helix" topo --topo "$topo/hgx8.xml"
quiet 0 -- env UCX_TCP_TX_SEG_SIZE=64kb UCX_TCP_RX_SEG_SIZE=1MB "$helix" topo --topo "$topo/hgx8.xml"
expect 0 "did you mean HELIX_COMM_TIMEOUT?" 1 -- env HELIX_COMM_TIMOUT=3 "$helix" topo --topo "$topo/hgx8.xml"
quiet 0 -- env HELIX_RUN_GRACE=3 HELIX_COMM_TIMEOUT=5 "$helix" topo --topo "$topo/hgx8.xml"
# a name of any length is warned about, its start shown (128 characters or more: silence)
long=$(printf 'COMM_TIMEOUT_%0200d' 0)
expect 0 "unknown environment variable HELIX_COMM_TIMEOUT_0000" 1 -- \
    env "HELIX_$long=1" "$helix" topo --topo "$topo/hgx8.xml"
expect 0 "... (213 characters)" 1 -- env "HELIX_$long=1" "$helix" topo --topo "$topo/hgx8.xml"
expect 0 "HELIX_DEBUG: 'infoo' is not one of ERROR|WARN|INFO|DEBUG|TRACE (did you mean INFO?)" 1 -- \
    env HELIX_DEBUG=infoo "$helix" topo --topo "$topo/hgx8.xml"
expect 0 "unknown subsystem 'topoo' ignored (did you mean TOPO?)" 1 -- \
    env HELIX_DEBUG_SUBSYS=net,topoo "$helix" topo --topo "$topo/hgx8.xml"

expect 2 "unknown command 'decod' (did you mean decode?)" 1 -- "$helix" decod --steps 1

# a scripted fault that a typo would turn into another (or none): refused, where a second
# step= replaced the first (the fault never fired, the test it served passed) and a missing
# rank=, an empty field or "+0" were taken; rank= and step= take K, M, G, T as every
# integer does (step=1K is step 1024), where a check of their own refused them
for f in nan:rank=0:step=1:step=2 nan:step=1 nan:rank=0: nan:rank=+0 nan:rank=0:step=17M; do
    expect 2 "HELIX_FAULT=\"$f\": expected KIND:rank=R[:step=S]" 1 -- \
        env HELIX_FAULT="$f" "$helix" decode --steps 2 --context 4
done
quiet 0 -- env HELIX_FAULT=nan:rank=0:step=1K "$helix" decode --steps 2 --context 4
expect 1 "non-finite value (nan) in the attention partials received from rank 0, layer 0, step 1" 1 -- \
    env HELIX_FAULT=nan:rank=0:step=1 "$helix" decode --steps 2 --context 4

# flags that only tune another flag's work, given without it: run, each said once (they
# were taken silently)
expect 0 "helix decode: warning: --check-tol 0.5 has no effect without --check" 1 -- \
    "$helix" decode --steps 1 --context 16 --check-tol 0.5
expect 0 "helix decode: warning: --route-margin 0.1 has no effect without --check" 1 -- \
    "$helix" decode --steps 1 --context 16 --route-margin 0.1
expect 0 "helix decode: warning: --prefill-chunk 8 has no effect without --prompt-ids" 1 -- \
    "$helix" decode --steps 1 --context 16 --prefill-chunk 8
quiet 0 -- "$helix" decode --steps 1 --context 16 --check-tol 0.5 --check
printf '1 2 3\n' >"$tmp/ids.txt"
# a prompt whose ids (one line copied for each of --batch requests) exceed the memory this
# process may take: refused before the copy, where a large one met the OOM killer (137)
expect 2 "ids.txt: 768 bytes of token ids (64 request(s) of 3 token(s)) are more than the 107 bytes this process may take (HELIX_MEM_LIMIT)" 1 -- \
    env HELIX_MEM_LIMIT=0.0000001 "$helix" decode --prompt-ids "$tmp/ids.txt" --batch 64 --steps 1
expect 0 "helix generate: warning: --eos 5 has no effect with --ignore-eos" 1 -- \
    "$helix" generate --prompt-ids "$tmp/ids.txt" --max-new 2 --ignore-eos --eos 5

# flags: the same parser and suffix rule
expect 2 "--kvp: '1Q' is not an integer" 1 -- "$helix" topo --topo "$topo/hgx8.xml" --kvp 1Q
expect 2 "--kvp: '0x4' is not an integer" 1 -- "$helix" topo --topo "$topo/hgx8.xml" --kvp 0x4
expect 2 "--tpa: '99999999999999999999' is outside" 1 -- \
    "$helix" topo --topo "$topo/hgx8.xml" --tpa 99999999999999999999
expect 2 "unknown option '--kvpp' (did you mean --kvp?)" 1 -- "$helix" topo --kvpp 2
expect 2 "--kvp needs a value" 1 -- "$helix" topo --kvp
expect 2 "--topo: an empty value" 1 -- "$helix" topo --topo ""
expect 0 "--hidden H" 1 -- sh -c "\"$helix\" info >&2"
# every flag table is listed, the benchmarks' too (with their one-letter aliases)
for t in decode generate topo "bench attention, merge and gemv" "bench a2a" "bench hopb" \
         "bench local"; do
    expect 0 "flags of helix $t:" 1 -- sh -c "\"$helix\" info >&2"
done
expect 0 "-b, --minbytes N" 1 -- sh -c "\"$helix\" info >&2"

# topology files that hwloc accepts but would be read wrong
expect 2 "bad-dupindex.xml:117: distances \"NVLinkBandwidth\" (line 114): index 18" 1 -- \
    "$helix" topo --topo "$topo/bad-dupindex.xml"
expect 2 "bad-dupindex.xml:117:" 1 -- env HELIX_TOPO_FILE="$topo/bad-dupindex.xml" "$helix" decode --steps 1
expect 2 "is over Core objects" 1 -- "$helix" topo --topo "$topo/bad-corematrix.xml"

# The exit status convention (docs/usage.md, "Exit status"): a config.json asking for a
# feature this version does not implement is input to fix, exit 2 like a malformed one,
# from every command that reads it, with the file and the key named once.
mkdir "$tmp/ck" "$tmp/ck-bad"
hf_config() { # $1: the rope_scaling object, $2: rope_theta's value
    printf '{\n  "architectures": ["LlamaForCausalLM"],\n  "model_type": "llama",\n'
    printf '  "hidden_size": 256,\n  "intermediate_size": 512,\n  "num_attention_heads": 8,\n'
    printf '  "num_key_value_heads": 2,\n  "num_hidden_layers": 2,\n  "vocab_size": 512,\n'
    printf '  "max_position_embeddings": 4096,\n  "rms_norm_eps": 1e-05,\n'
    printf '  "rope_scaling": %s,\n  "rope_theta": %s,\n' "$1" "$2"
    printf '  "tie_word_embeddings": false,\n  "torch_dtype": "bfloat16"\n}\n'
}
hf_config '{"rope_type": "ntk-by-parts", "factor": 2.0}' 10000.0 >"$tmp/ck/config.json"
hf_config 'null' '"fast"' >"$tmp/ck-bad/config.json"
unimpl='config.json:12:3: rope_scaling: "ntk-by-parts" RoPE scaling is not implemented'
expect 2 "$unimpl" 1 -- "$helix" decode --model "$tmp/ck" --steps 1
expect 2 "$unimpl" 1 -- "$helix" model info "$tmp/ck" --config-only
printf '1 2 3\n' >"$tmp/prompt.txt"
expect 2 "$unimpl" 1 -- "$helix" generate --model "$tmp/ck" --prompt-ids "$tmp/prompt.txt"
expect 2 "config.json:13:3: rope_theta: expected a finite number" 1 -- "$helix" decode --model "$tmp/ck-bad" --steps 1
expect 2 "config.json:13:3: rope_theta: expected a finite number" 1 -- "$helix" model info "$tmp/ck-bad" --config-only
printf '{"architectures": ["LlamaForCausalLM"], "hidden_size": }\n' >"$tmp/ck-bad/config.json"
expect 2 "config.json:1:" 1 -- "$helix" decode --model "$tmp/ck-bad" --steps 1

[ "$fails" = 0 ] || { echo "$fails case(s) failed"; exit 1; }
echo "all cases passed"
