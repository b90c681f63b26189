#!/usr/bin/env bash
# The nvcc compile gate: every kernels/*.cu must
#   - compile for sm_80 and sm_90a, plus compute_80 PTX (what a newer GPU
#     JIT-compiles), with every nvcc and host-compiler warning an error;
#   - show, in ptxas -v, no spill stores or loads in any function, and
#     registers / static shared memory within the budget the .cu states;
#   - declare its kernels with OT_KERNEL and launch them with OT_LAUNCH, never
#     __global__ or <<<>>> directly (the emulated device builds the same file);
#   - emit PTX (for compute_80 and compute_90a) containing the instructions
#     the .cu says it is written to produce, so a refactor that silently
#     loses e.g. the warp shuffle fails here rather than on a lent GPU.
# A .cu states its budget in comment lines:
#   // compile-gate: max-registers 32
#   // compile-gate: max-static-smem 0
#   // compile-gate: ptx shfl.sync.bfly      (one line per instruction)
# Prints one line per check and exits non-zero if any failed. No GPU needed.
# Arguments: .cu files to check instead of kernels/*.cu (the gate's own test).
set -uo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
nvcc="${NVCC:-}"
if [ -z "$nvcc" ]; then
  nvcc="$(command -v nvcc || true)"
  [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
fi
if [ -z "$nvcc" ] || ! [ -x "$nvcc" ]; then
  echo "compile-gate: nvcc not found: install the CUDA toolkit (13.x, nvcc) or set NVCC=/path/to/nvcc" >&2
  exit 2
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
checks=0
ok() { checks=$((checks + 1)); echo "ok   $*"; }
bad() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL $*"; }

common=(-std=c++17 -O3 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror -I"$here/include")
targets=(-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90a,code=sm_90a
  -gencode arch=compute_80,code=compute_80)

echo "compile-gate: $("$nvcc" --version | tail -1)"
shopt -s nullglob
if [ "$#" -gt 0 ]; then sources=("$@"); else sources=("$here"/kernels/*.cu); fi
[ "${#sources[@]}" -eq 0 ] && bad "no kernels/*.cu found under $here"

for cu in "${sources[@]}"; do
  name="$(basename "$cu")"
  max_regs="$(sed -n 's|^// compile-gate: max-registers \([0-9]*\).*|\1|p' "$cu" | head -1)"
  max_smem="$(sed -n 's|^// compile-gate: max-static-smem \([0-9]*\).*|\1|p' "$cu" | head -1)"
  mapfile -t want_ptx < <(sed -n 's|^// compile-gate: ptx \([^ ]*\).*|\1|p' "$cu")
  if [ -z "$max_regs" ] || [ -z "$max_smem" ] || [ "${#want_ptx[@]}" -eq 0 ]; then
    bad "$name states no budget: it needs '// compile-gate: max-registers N', 'max-static-smem N' and 'ptx INSTR' lines"
    continue
  fi

  # One source for both builds: the emulated device compiles the same .cu with
  # g++, which knows neither __global__ nor <<<>>>.
  if grep -qE '__global__|<<<' "$cu"; then
    bad "$name: declares or launches a kernel directly (__global__ / <<<>>>): use OT_KERNEL and OT_LAUNCH (include/ot_cuda/launch.h) so the emulated device builds it too"
  else
    ok "$name: kernels through OT_KERNEL / OT_LAUNCH"
  fi

  log="$work/$name.ptxas"
  if "$nvcc" "${common[@]}" "${targets[@]}" -Xptxas -v -c "$cu" -o "$work/$name.o" >"$log" 2>&1; then
    ok "$name: compiles for sm_80, sm_90a and compute_80 PTX, warnings as errors"
  else
    bad "$name: nvcc failed:"
    sed 's/^/     /' "$log"
    continue
  fi

  # ptxas -v, per function and architecture:
  #   Compiling entry function '_Z...' for 'sm_80'
  #   Function properties for _Z...
  #       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  #   Used 28 registers, used 1 barriers, 16 bytes smem, 384 bytes cmem[0]
  # -> one record per function: arch name regs smem stack spill_stores spill_loads
  awk '
    /Compiling entry function/ { match($0, /function .[^'"'"']*/); fn = substr($0, RSTART + 10, RLENGTH - 10)
                                 match($0, /for .sm_[0-9a-z]*/); arch = substr($0, RSTART + 5, RLENGTH - 5) }
    /Function properties for/  { if (fn == "") { fn = $NF } }
    /bytes stack frame/        { stack = $1; stores = $5; loads = $9
                                 if (fn != "" && arch == "") { print "-", fn, "-", "-", stack, stores, loads; fn = "" } }
    /Used [0-9]+ registers/    { regs = $0; sub(/.*Used /, "", regs); sub(/ registers.*/, "", regs)
                                 smem = 0; if (match($0, /[0-9]+ bytes smem/)) { smem = substr($0, RSTART, RLENGTH); sub(/ .*/, "", smem) }
                                 print arch, fn, regs, smem, stack, stores, loads; fn = ""; arch = "" }
  ' "$log" >"$work/$name.records"
  if ! [ -s "$work/$name.records" ]; then
    bad "$name: no ptxas -v records (no kernel?)"
    continue
  fi
  while read -r arch fn regs smem stack stores loads; do
    pretty="$(echo "$fn" | c++filt 2>/dev/null || echo "$fn")"
    line="$name $arch $pretty: $regs registers (budget $max_regs), $stores spill stores, $loads spill loads, $stack bytes stack, $smem bytes static smem (budget $max_smem)"
    problems=()
    [ "$stores" != 0 ] || [ "$loads" != 0 ] && problems+=("spills")
    [ "$regs" != - ] && [ "$regs" -gt "$max_regs" ] && problems+=("over the register budget")
    [ "$smem" != - ] && [ "$smem" -gt "$max_smem" ] && problems+=("over the shared-memory budget")
    if [ "${#problems[@]}" -eq 0 ]; then
      ok "$line"
    else
      bad "$line: $(IFS=,; echo "${problems[*]}" | sed 's/,/, /g')"
    fi
  done <"$work/$name.records"

  for arch in compute_80 compute_90a; do
    ptx="$work/$name.$arch.ptx"
    if ! "$nvcc" "${common[@]}" -arch="$arch" -ptx "$cu" -o "$ptx" >"$work/$name.$arch.log" 2>&1; then
      bad "$name $arch: PTX generation failed:"
      sed 's/^/     /' "$work/$name.$arch.log"
      continue
    fi
    for instr in "${want_ptx[@]}"; do
      count="$(grep -cF -- "$instr" "$ptx" || true)"
      if [ "$count" -gt 0 ]; then
        ok "$name $arch PTX contains $instr ($count times)"
      else
        bad "$name $arch PTX lacks $instr"
      fi
    done
  done
done

echo "compile-gate: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
