#!/usr/bin/env bash
# The engine's device check (issue 47), for a lent GPU machine, which has nvcc,
# CMake and PyTorch but no Node.js and no network.
#
#   bash packages/engine/scripts/device-check.sh --pack   # here: build what the device needs
#   bash packages/engine/scripts/device-check.sh          # there: one JSON line of figures
#   bash packages/engine/scripts/device-check.sh --cpu    # the dry run CI does (no GPU)
#
# --pack writes packages/engine/build/device-check/ (carry it to the device,
# with node_modules/node-addon-api): node.tar.xz (this Node binary and its
# headers, for the CUDA addon's build), device-check.mjs (bench/device-check.ts
# bundled with the engine; no node_modules needed), and the portable CPU addon
# (build-noblas, for the CPU side of the agreement check).
# On the device it unpacks Node, builds the CUDA addon with nvcc
# (packages/kernels/scripts/build-cuda.mjs --strict), runs the check on cuda:0
# (OPENTINKER_CHECK_DEVICE to pick another), runs the torch peer's training
# step there (bench/torch_device.py) and prints one JSON line. Under
# 8 minutes on an H100/H200; the Qwen2.5-0.5B and Llama-3-8B (4 layers)
# shapes are built with random bf16 weights.
# --cpu bundles the same program and runs the bundle on the emulated CUDA
# device with tiny shapes (--quick), so the device path cannot rot.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
out="$root/packages/engine/build/device-check"
kernels="$root/packages/kernels"

bundle() {
  mkdir -p "$out"
  "$root/node_modules/esbuild/bin/esbuild" "$root/packages/engine/bench/device-check.ts" \
    --bundle --platform=node --format=esm --target=node20 --log-level=warning \
    --external:'*.node' \
    --banner:js="import { createRequire as __otRequire } from 'node:module'; const require = __otRequire(import.meta.url);" \
    --outfile="$out/device-check.mjs"
}

case "${1:-}" in
  --pack)
    bundle
    node_bin="$(readlink -f "$(command -v node)")"
    node_prefix="$(dirname "$(dirname "$node_bin")")"
    [ -f "$node_prefix/include/node/node_api.h" ] || { echo "device-check: no Node headers under $node_prefix/include/node" >&2; exit 2; }
    staging="$(mktemp -d)"
    trap 'rm -rf "$staging"' EXIT
    mkdir -p "$staging/node/bin" "$staging/node/include"
    cp "$node_bin" "$staging/node/bin/node"
    cp -r "$node_prefix/include/node" "$staging/node/include/node"
    tar -C "$staging" -cf - node | xz -T2 -6 >"$out/node.tar.xz"
    # The CPU addon without OpenBLAS (x86-64-v3, nothing to install there).
    [ -f "$kernels/build-noblas/opentinker_kernels.node" ] ||
      npm run build:native -w @opentinker/kernels -- --variant noblas >&2
    cp "$kernels/build-noblas/opentinker_kernels.node" "$out/opentinker_kernels_cpu.node"
    du -sh "$out"
    echo "device-check: packed $out (carry it and node_modules/node-addon-api)"
    ;;
  --cpu)
    bundle
    OPENTINKER_KERNELS_ADDON="$kernels/build/Release/opentinker_kernels.node" OPENTINKER_KERNELS_CUDA_ADDON=none \
      OPENTINKER_KERNELS_CUDA_EMU_ADDON="$kernels/build-cuda/opentinker_kernels_cuda_emu.node" \
      node "$out/device-check.mjs" --device cuda-emulated --quick
    ;;
  "")
    [ -f "$out/device-check.mjs" ] || { echo "device-check: run --pack first (no $out/device-check.mjs)" >&2; exit 2; }
    node_dir="$(mktemp -d)/node"
    tar -C "$(dirname "$node_dir")" -xJf "$out/node.tar.xz"
    export PATH="$node_dir/bin:$PATH"
    echo "device-check: $(node --version), $(nvcc --version | tail -1)" >&2
    node "$kernels/scripts/build-cuda.mjs" --strict >&2
    ours="$(OPENTINKER_KERNELS_ADDON="$out/opentinker_kernels_cpu.node" \
      OPENTINKER_KERNELS_CUDA_ADDON="$kernels/build-cuda/opentinker_kernels_cuda.node" \
      node "$out/device-check.mjs" --device "${OPENTINKER_CHECK_DEVICE:-cuda:0}" | tail -1)" || status=$?
    # The torch peer's training step on the same device (bench/torch_device.py), then one line.
    peers=()
    for shape in qwen llama8b4; do
      peers+=("$(python3 "$root/packages/engine/bench/torch_device.py" "$shape" 2>/dev/null | tail -1 || echo '{}')")
    done
    python3 - "$ours" "${peers[@]}" <<'PY'
import json, sys
ours = json.loads(sys.argv[1] or "{}")
torch = [json.loads(p or "{}") for p in sys.argv[2:]]
for model, peer in zip(ours.get("models", []), torch):
    model["torch"] = peer
    mine, theirs = model.get("training", {}).get("loraR16TokensPerS"), peer.get("loraR16TokensPerS")
    if mine and theirs:
        model["training"]["overTorch"] = round(mine / theirs, 3)
print(json.dumps(ours))
PY
    exit "${status:-0}"
    ;;
  *)
    echo "usage: device-check.sh [--pack | --cpu]" >&2
    exit 2
    ;;
esac
