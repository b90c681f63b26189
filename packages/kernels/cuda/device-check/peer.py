"""The torch peer of the device check (issue 46), on the same GPU in the same run.

Prints ONE JSON line: torch.matmul bf16 TFLOPS at 4096^3, and a PEFT-style
multi-LoRA forward (one base product, then a Python loop over adapters:
gather the adapter's rows, x_a @ A^T @ B^T * s, index_add back) for 1, 8, 32
adapters, rank 16, 512 prefill + 64 decode rows, hidden 4096 -- the shapes and
the row assignment of device_check.cu. Timed with CUDA events.
"""

import json
import sys


def time_ms(torch, fn, warmup, iters):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / iters


def main():
    try:
        import torch
    except ImportError as e:
        print(json.dumps({"peer": None, "reason": f"torch not importable: {e}"}))
        return 0
    if not torch.cuda.is_available():
        print(json.dumps({"peer": None, "reason": "torch.cuda.is_available() is False"}))
        return 0
    dev = torch.device("cuda")
    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0)}
    g = torch.Generator(device=dev).manual_seed(0)

    n = 4096
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16, generator=g)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16, generator=g)
    ms = time_ms(torch, lambda: torch.matmul(a, b), 3, 20)
    out["matmul_bf16_4096"] = {"ms": round(ms, 4), "tflops": round(2 * n**3 / (ms * 1e-3) / 1e12, 1)}
    del a, b

    hidden, prefill, decode, rank = 4096, 512, 64, 16
    rows = prefill + decode
    x = torch.randn(rows, hidden, device=dev, dtype=torch.bfloat16, generator=g)
    w = torch.randn(hidden, hidden, device=dev, dtype=torch.bfloat16, generator=g)
    base_ms = time_ms(torch, lambda: x @ w.t(), 3, 50)
    lora = {"dtype": "bf16", "rows_prefill": prefill, "rows_decode": decode, "hidden": hidden, "rank": rank,
            "base_ms": round(base_ms, 4)}
    for adapters in (1, 8, 32):
        slots = [i * adapters // prefill for i in range(prefill)] + [i % adapters for i in range(decode)]
        slots_t = torch.tensor(slots, device=dev)
        index = [torch.nonzero(slots_t == s).flatten() for s in range(adapters)]
        a_mats = [torch.randn(rank, hidden, device=dev, dtype=torch.bfloat16, generator=g) * 0.02 for _ in range(adapters)]
        b_mats = [torch.randn(hidden, rank, device=dev, dtype=torch.bfloat16, generator=g) * 0.02 for _ in range(adapters)]

        def peft_loop(y):
            for s in range(adapters):
                rows_s = index[s]
                xs = x.index_select(0, rows_s)
                y.index_add_(0, rows_s, (xs @ a_mats[s].t()) @ b_mats[s].t() * 2.0)
            return y

        y0 = x @ w.t()
        lora_ms = time_ms(torch, lambda: peft_loop(y0), 3, 50)
        both_ms = time_ms(torch, lambda: peft_loop(x @ w.t()), 3, 50)
        lora[str(adapters)] = {"lora_ms": round(lora_ms, 4), "base_plus_lora_ms": round(both_ms, 4),
                               "overhead": round(lora_ms / base_ms, 3)}
    out["multi_lora_peft_loop"] = lora
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
