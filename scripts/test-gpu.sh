#!/usr/bin/env bash
# What CI cannot test (it has no GPU): ndtune on a machine with an NVIDIA GPU, through both of
# its backends. Run on the GPU machine before every stop that touches a device backend:
#   scripts/test-gpu.sh [NDTUNE]        (NDTUNE: the binary, default target/release/ndtune;
#                                       CAPI=libndtune_capi.so also checks the C API's CUDA pick)
# It registers NVIDIA's OpenCL driver where it is not, then checks, each with its own line:
#   - `ndtune devices` lists the GPU through CUDA (compute capability, grid, shared memory) and
#     through OpenCL;
#   - a CUDA kernel (examples/cuda/saxpy.toml, C++ linkage) tunes whole, every configuration
#     verified and measured, and a second run reuses every result;
#   - every outcome of a CUDA configuration (scripts/gpu/faulty.toml): build_failed with NVRTC's
#     log, refused with the driver's error name, crashed (an illegal address poisons the
#     context: the worker is replaced) and measured, in one campaign that goes on;
#   - a template instance as the kernel name (scripts/gpu/templated.toml);
#   - a source NVRTC refuses (scripts/gpu/cub.toml: CUB's umbrella header) built by nvcc, a
#     template instance found in nvcc's cubin, checked against the host;
#   - constant memory (scripts/gpu/constant.toml, `kind = "constant"`) and dynamic shared memory
#     (scripts/gpu/shared.toml, a `local` argument), each checked on the host;
#   - a sweep of three sizes of the constant memory filter, each campaign after the first in the
#     measurement and build worker processes the one before left (a build worker slot first
#     used by a later campaign starts its process then), each verified;
#   - the CUDA SGEMM (examples/cuda/sgemm.toml) and its OpenCL twin on the same GPU;
#   - where the `ndtune` wheel is installed, the Python package's tune_kernel of a CUDA kernel
#     with constant and dynamic shared memory, verified and reused (scripts/gpu/python_cuda.py);
#   - a CUDA kernel asked for on an OpenCL device is refused before anything runs;
#   - `split` of one range across the GPU through CUDA and the CPU through OpenCL (PoCL), the
#     kernel and its twin (examples/conv1d.toml, examples/cuda/conv1d.toml), checked against
#     one device alone.
# Prints PASS/FAIL per check and exits non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
NDTUNE=${1:-target/release/ndtune}
if [ ! -e /etc/OpenCL/vendors/nvidia.icd ] && [ -w /etc ]; then
    mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 >/etc/OpenCL/vendors/nvidia.icd
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
check() { # NAME COMMAND...: runs the command, PASS when it exits 0 (SHOW=1: with its output)
    local name=$1
    shift
    if "$@" >"$work/out" 2>"$work/err"; then
        echo "PASS $name"
        [ -z "${SHOW:-}" ] || sed 's/^/    /' "$work/out" | tail -5
    else
        echo "FAIL $name"
        sed 's/^/    /' "$work/out" "$work/err" | tail -40
        failed=1
    fi
}
# The JSON of `tune --json` on stdin, checked by a Python expression over `d` (one device).
expect() {
    python3 -c "
import json, sys
d = json.load(sys.stdin)['devices'][0]
o = d['outcomes']
ok = $1
print(json.dumps({'outcomes': o, 'best': d['best'] and d['best']['config'], 'ms': d['best'] and d['best']['time_ms']}))
sys.exit(0 if ok else 1)"
}

"$NDTUNE" devices 2>&1 | tee "$work/devices"
cuda=$(python3 - "$work/devices" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
block = text.split("platform: CUDA", 1)
print(re.search(r"\[(\d+)\]", block[1]).group(1) if len(block) == 2 else "")
EOF
)
opencl=$(python3 - "$work/devices" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"platform: NVIDIA CUDA\n\s+\[(\d+)\]", text)
print(m.group(1) if m else "")
EOF
)
check "devices: a CUDA device ($cuda) and the GPU through OpenCL ($opencl)" \
    test -n "$cuda" -a -n "$opencl"
check "devices: CUDA limits" grep -q "compute capability" "$work/devices"

tune() { "$NDTUNE" tune "$@" --db "$work/tune.db" --json; }
check "cuda saxpy: 20 measured, verified" \
    bash -c "$(declare -f tune expect); NDTUNE=$NDTUNE work=$work; \
    tune examples/cuda/saxpy.toml | expect \"o['measured'] == 20 and d['verified']\""
check "cuda saxpy again: every result reused" \
    bash -c "$(declare -f tune expect); NDTUNE=$NDTUNE work=$work; \
    tune examples/cuda/saxpy.toml | expect \"d['reused'] == 20 and d['evaluated'] == 0\""
# The C API's pick for a CUDA device (through ctypes), where its library is given.
if [ -n "${CAPI:-}" ]; then
    check "C API: ndtune_pick_cuda gives saxpy's tuned configuration on CUDA device 0" \
        bash -c "'$NDTUNE' export --db '$work/tune.db' --spec examples/cuda/saxpy.toml --format wisdom \
        --out '$work/w.json' && best=\$('$NDTUNE' tune examples/cuda/saxpy.toml --db '$work/tune.db' --json \
        | python3 -c \"import json, sys; c = json.load(sys.stdin)['devices'][0]['best']['config']; \
        print(' '.join(f'{k}={v}' for k, v in c.items()))\") && \
        python3 scripts/gpu/pick_cuda.py '$CAPI' '$work/w.json' \"\$best\""
fi
check "cuda faults: 2 build_failed, 2 refused, 1 crashed, 1 measured" \
    bash -c "$(declare -f tune expect); NDTUNE=$NDTUNE work=$work; \
    tune scripts/gpu/faulty.toml | expect \"(o['build_failed'], o['refused'], o['crashed'], o['measured']) == (2, 2, 1, 1)\""
check "cuda faults: the reasons are shown" \
    bash -c "'$NDTUNE' show scripts/gpu/faulty.toml --db '$work/tune.db' >'$work/show' 2>&1; \
    cat '$work/show'; grep -q CUDA_ERROR_ILLEGAL_ADDRESS '$work/show' && grep -q 'MODE 2 does not build' '$work/show'"
check "cuda template instance: 6 measured" \
    bash -c "$(declare -f tune expect); NDTUNE=$NDTUNE work=$work; \
    tune scripts/gpu/templated.toml | expect \"o['measured'] == 6\""
check "cuda source only nvcc builds (cub/cub.cuh): 6 measured, checked against the host" \
    bash -c "$(declare -f tune expect); NDTUNE=$NDTUNE work=$work; \
    tune scripts/gpu/cub.toml | expect \"o['measured'] == 6 and d['verified']\""
check "cuda constant memory: 5 measured, checked against the host" \
    bash -c "$(declare -f tune expect); NDTUNE=$NDTUNE work=$work; \
    tune scripts/gpu/constant.toml | expect \"o['measured'] == 5 and d['verified']\""
check "cuda dynamic shared memory: 5 measured, each checked" \
    bash -c "$(declare -f tune expect); NDTUNE=$NDTUNE work=$work; \
    tune scripts/gpu/shared.toml | expect \"o['measured'] == 5 and d['verified']\""
check "cuda sweep TAPS=5,17,33: 5 measured each, verified, one measurement worker, no build worker started twice" \
    bash -c "'$NDTUNE' tune scripts/gpu/constant.toml --set TAPS=5,17,33 --db '$work/sweep.db' --json | python3 -c \"
import json, sys
runs = json.load(sys.stdin)['devices']
for r in runs:
    t = r['time']
    print(r['constants']['TAPS'], r['outcomes'], r['verified'], 'workers', t['workers_started'], 'builders', t['builders_started'], 'campaign_s', round(t['campaign_s'], 3))
assert [r['outcomes'].get('measured') for r in runs] == [5, 5, 5] and all(r['verified'] for r in runs)
assert all(r['time']['workers_started'] == 0 for r in runs[1:])
assert sum(r['time']['builders_started'] for r in runs) <= runs[0]['time']['build_jobs']
\""
check "cuda sgemm N=1024: every configuration the model keeps runs, right" \
    bash -c "$(declare -f tune expect); NDTUNE=$NDTUNE work=$work; \
    tune examples/cuda/sgemm.toml --set N=1024 | expect \"o['measured'] + o['refused'] == d['pruned'] and o['measured'] > 0 and o['wrong_result'] == 0\""
check "opencl sgemm N=1024 on the same GPU" \
    bash -c "$(declare -f tune expect); NDTUNE=$NDTUNE work=$work; \
    tune examples/sgemm.toml --set N=1024 --device $opencl | expect \"o['wrong_result'] == 0 and o['measured'] > 0\""
cpu=$(python3 - "$work/devices" <<'EOF'
import re, sys
m = re.search(r"platform: Portable Computing Language\n\s+\[(\d+)\]", open(sys.argv[1]).read())
print(m.group(1) if m else "")
EOF
)
SHOW=1 check "split: one range across the GPU through CUDA ($cuda) and the CPU through OpenCL ($cpu)" \
    bash -c "'$NDTUNE' split examples/conv1d.toml --twin examples/cuda/conv1d.toml --devices $cuda,$cpu \
    --set N=4194304 --db '$work/split.db' --json >'$work/split' 2>'$work/split.err'; rc=\$?; \
    tail -3 '$work/split.err'; python3 -c \"import json; r = json.load(open('$work/split')); \
    print([d['device'] for d in r['devices']], r['single_ms'], 'speedup', r['speedup'], 'efficiency', r['efficiency'], r['verified']); assert r['verified']\" && [ \$rc -eq 0 ]"
# The Python package, where its wheel is installed: a Kernel Tuner style CUDA call.
if python3 -c "import ndtune" 2>/dev/null; then
    SHOW=1 check "python: tune_kernel of a CUDA kernel with cmem_args and smem_args, verified and reused; run_kernel; space" \
        python3 scripts/gpu/python_cuda.py
fi
check "a CUDA kernel on an OpenCL device is refused" \
    bash -c "! '$NDTUNE' tune examples/cuda/saxpy.toml --device $opencl --db '$work/x.db' >'$work/wrong' 2>&1; \
    rc=\$?; cat '$work/wrong'; [ \$rc -eq 0 ] && grep -q 'runs OpenCL kernels, not CUDA ones' '$work/wrong'"
exit $failed
