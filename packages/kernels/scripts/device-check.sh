#!/usr/bin/env bash
# The device check (issue 46): builds cuda/device-check/device_check.cu with
# every kernels/*.cu launcher and blaslt/loader.cpp (nvcc, static CUDA runtime,
# warnings as errors; no Boost, no Node), then
#
#   device-check.sh          on a GPU machine: the op checks against float64 and
#                            the figures, compute-sanitizer over the op checks
#                            when present, and the torch peer (peer.py) when
#                            torch imports; prints ONE JSON line (all merged);
#                            exit 1 if an op, a sanitizer run or the build failed.
#   device-check.sh --cpu    CI, no GPU: compiles for sm_80 and sm_90a, runs the
#                            program's probe (no driver: {"device": null,
#                            "reason": "cudaErrorInsufficientDriver (35): ..."}),
#                            py_compiles the peer; ONE JSON line; exit 0 unless
#                            something did not build.
#
# nvcc: $NVCC, else $OT_NVCC ("none": no nvcc, as for build-cuda.mjs), else PATH, $CUDA_HOME/bin, /usr/local/cuda/bin.
# cuBLASLt: $OT_CUBLASLT_LIBRARY, else the nvidia-cublas wheel's libcublasLt.so.*
# (python3 -c 'import nvidia.cublas'), else the loader's default names.
# Progress goes to stderr; stdout is the JSON line alone.
set -uo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"  # packages/kernels
cuda="$here/cuda"
src="$cuda/device-check"
mode=gpu
[ "${1:-}" = "--cpu" ] && mode=cpu
log() { echo "device-check: $*" >&2; }

# One JSON line even when we stop early: {"device": null, "reason": ..., "build": ...}.
die() {
  python3 -c 'import json,sys; print(json.dumps({"device": None, "reason": sys.argv[1], "mode": sys.argv[2], "build": "failed"}))' "$1" "$mode" 2>/dev/null ||
    printf '{"device": null, "reason": "%s", "build": "failed"}\n' "$(echo "$1" | tr -d '"\\' | tr '\n' ' ')"
  exit 1
}

nvcc="${NVCC:-${OT_NVCC:-}}"
[ "$nvcc" = none ] && die "nvcc not found (OT_NVCC=none)"
if [ -z "$nvcc" ]; then
  nvcc="$(command -v nvcc || true)"
  [ -z "$nvcc" ] && [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ] && nvcc="$CUDA_HOME/bin/nvcc"
  [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
  if [ -z "$nvcc" ]; then  # the nvidia-cuda-nvcc wheel, where torch brought one
    nvcc="$(python3 -c 'import nvidia.cuda_nvcc, os; print(os.path.join(list(nvidia.cuda_nvcc.__path__)[0], "bin", "nvcc"))' 2>/dev/null || true)"
  fi
fi
[ -n "$nvcc" ] && [ -x "$nvcc" ] || die "nvcc not found: install the CUDA toolkit or set NVCC=/path/to/nvcc"

out="${OT_DEVICE_CHECK_BUILD:-$src/build}"
mkdir -p "$out" || die "cannot create $out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# sm_80 and sm_90a machine code (an H100/H200 runs sm_90a), compute_80 PTX for the rest.
targets=(-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90a,code=sm_90a
  -gencode arch=compute_80,code=compute_80)
strict=(-Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror)
log "$("$nvcc" --version | tail -1)"
started=$SECONDS
prog="$out/device_check"
# Rebuilt unless the binary is newer than every source it is made of (and than this script).
stale="$(find "$cuda/kernels" "$cuda/include" "$cuda/blaslt" "$src" "$0" -newer "$prog" \
  \( -name '*.cu' -o -name '*.cuh' -o -name '*.h' -o -name '*.cpp' -o -name '*.sh' \) -print -quit 2>/dev/null || echo missing)"
[ -x "$prog" ] || stale=missing
built=false
if [ -n "$stale" ]; then
  built=true
  pids=()
  objects=()
  compile() {  # compile <name> <args...>: in the background, log beside the object
    local name="$1"
    shift
    objects+=("$work/$name.o")
    ("$nvcc" "$@" -c -o "$work/$name.o" >"$work/$name.log" 2>&1 || echo "$name" >>"$work/failed") &
    pids+=($!)
  }
  for cu in "$cuda"/kernels/*.cu; do
    name="$(basename "$cu" .cu)"
    compile "$name" -std=c++17 -O3 "${targets[@]}" "${strict[@]}" -I"$cuda/include" "$cu"
  done
  compile loader -std=c++17 -O2 "${strict[@]}" -x c++ "$cuda/blaslt/loader.cpp"
  compile device_check -std=c++17 -O2 "${targets[@]}" "${strict[@]}" -I"$cuda/include" "$src/device_check.cu"
  for p in "${pids[@]}"; do wait "$p"; done
  if [ -s "$work/failed" ]; then
    for f in $(cat "$work/failed"); do
      log "nvcc failed on $f:"
      sed 's/^/    /' "$work/$f.log" >&2
    done
    die "nvcc failed on: $(tr '\n' ' ' <"$work/failed")"
  fi
  "$nvcc" "${targets[@]}" -cudart static "${objects[@]}" -ldl -o "$out/device_check" >"$work/link.log" 2>&1 || {
    sed 's/^/    /' "$work/link.log" >&2
    die "linking device_check failed"
  }
  log "built $prog in $((SECONDS - started)) s"
else
  log "$prog is up to date"
fi
build_s=$((SECONDS - started))

# Merges JSON objects: the first is the program's line; the others are added under their keys.
merge() {  # merge <line> key=<json-or-file> ...
  python3 - "$@" <<'PY'
import json, sys
line = json.loads(sys.argv[1])
for arg in sys.argv[2:]:
    key, _, value = arg.partition("=")
    try:
        line[key] = json.loads(value)
    except ValueError:
        line[key] = value
print(json.dumps(line))
PY
}

if [ "$mode" = cpu ]; then
  # The machine code in the binary, where cuobjdump is at hand (else the build's -gencode list stands).
  cuobjdump="${CUOBJDUMP:-$(dirname "$(readlink -f "$nvcc")")/cuobjdump}"
  elf='"not listed: cuobjdump not found"'
  if [ -x "$cuobjdump" ]; then
    elf="$(python3 -c 'import json,sys; print(json.dumps(sorted(set(sys.argv[1].split()))))' \
      "$("$cuobjdump" --list-elf "$prog" 2>/dev/null | grep -o 'sm_[0-9]*a*')")"
  fi
  probe="$("$prog" --probe)"
  rc=$?
  [ $rc -eq 0 ] || die "device_check --probe exited $rc: $probe"
  peer=ok
  python3 -m py_compile "$src/peer.py" 2>"$work/peer.log" || peer="failed: $(tr '\n' ' ' <"$work/peer.log")"
  rm -rf "$src/__pycache__"
  merged="$(merge "$probe" "mode=\"cpu\"" "build={\"targets\": [\"sm_80\", \"sm_90a\", \"compute_80\"], \"seconds\": $build_s, \"rebuilt\": $built}" \
    "elf=$elf" \
    "peer_py_compile=$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$peer")")" || die "merging the JSON failed"
  echo "$merged"
  [ "$peer" = ok ] || exit 1
  exit 0
fi

# ---- on a GPU machine
status=0
if [ -z "${OT_CUBLASLT_LIBRARY:-}" ]; then
  lib="$(python3 -c 'import nvidia.cublas, os, glob
d = [p for p in nvidia.cublas.__path__][0]
print(sorted(glob.glob(os.path.join(d, "lib", "libcublasLt.so.*")))[-1])' 2>/dev/null || true)"
  if [ -n "$lib" ]; then export OT_CUBLASLT_LIBRARY="$lib"; fi
fi
log "cuBLASLt: ${OT_CUBLASLT_LIBRARY:-libcublasLt.so.13, then .so.12 (the default names)}"

log "op checks and figures"
line="$("$prog")"
rc=$?
[ -n "$line" ] || die "device_check printed nothing (exit $rc)"
if [ $rc -eq 3 ]; then  # no usable device: nothing more to run
  merge "$line" "mode=\"gpu\"" "build_seconds=$build_s" || echo "$line"
  exit 1
fi
[ $rc -eq 0 ] || status=1

# compute-sanitizer over the op checks: memcheck on all, racecheck on those with shared memory.
san="$(command -v compute-sanitizer || true)"
[ -z "$san" ] && [ -x "$(dirname "$nvcc")/compute-sanitizer" ] && san="$(dirname "$nvcc")/compute-sanitizer"
[ -z "$san" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ] && san=/usr/local/cuda/bin/compute-sanitizer
if [ -n "$san" ]; then
  sanitizer="{"
  for tool in memcheck racecheck; do
    ops=()
    [ "$tool" = racecheck ] && ops=(--ops rmsnorm,rmsnorm_backward,rope,sum_of_squares,gemm_bf16,lora,paged_attention)
    log "compute-sanitizer --tool $tool"
    timeout 150 "$san" --tool "$tool" --error-exitcode 97 "$prog" --ops-only "${ops[@]}" >"$work/$tool.log" 2>&1
    trc=$?
    [ -n "${OUT:-}" ] && [ -d "$OUT" ] && cp "$work/$tool.log" "$OUT/sanitizer-$tool.log"
    summary="$(grep -o 'ERROR SUMMARY: .*\|RACECHECK SUMMARY: .*' "$work/$tool.log" | tail -1 | tr -d '"')"
    if [ $trc -eq 0 ]; then
      verdict=pass
    elif [ $trc -eq 124 ]; then
      verdict="timed out after 150 s (no finding; rerun alone with a longer limit)"
    else
      verdict="fail (exit $trc)"
      status=1
      grep -m 20 '=========' "$work/$tool.log" >&2
    fi
    [ "$sanitizer" = "{" ] || sanitizer+=", "
    sanitizer+="\"$tool\": {\"result\": \"$verdict\", \"summary\": \"$summary\"}"
  done
  sanitizer+="}"
else
  sanitizer='"skipped: compute-sanitizer not found"'
fi

# The torch peer, same machine, same run.
log "torch peer"
peer="$(timeout 180 python3 "$src/peer.py" 2>"$work/peer.log" | tail -1)"
if ! python3 -c 'import json,sys; json.loads(sys.argv[1])' "$peer" 2>/dev/null; then
  peer="$(python3 -c 'import json,sys; print(json.dumps("failed: " + sys.argv[1][-400:]))' "$(cat "$work/peer.log")")"
fi

final="$(merge "$line" "mode=\"gpu\"" "build_seconds=$build_s" "sanitizer=$sanitizer" "peer=$peer" \
  "total_seconds=$SECONDS")" || {
  final="$line"
  status=1
}
# Where the device tool collects files ($OUT exists only there), the line as a file too.
[ -n "${OUT:-}" ] && [ -d "$OUT" ] && echo "$final" >"$OUT/device-check.json"
echo "$final"
exit $status
