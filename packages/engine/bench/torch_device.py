"""The torch peer of the engine's device check (scripts/device-check.sh): the
Qwen2-style LoRA training step of torch_train.py (rank 16 on every linear) on
the GPU, bf16 autocast over f32 weights, 8 sequences of 1024 tokens. Prints
one JSON line: {"shape", "torch", "device", "loraR16TokensPerS"}.

usage: python3 torch_device.py <qwen|llama8b4> [steps]
"""
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_train as tt  # noqa: E402  (the same model, only its sequence length changes)

tt.SEQ = 1024
tt.SHAPES["llama8b4"] = dict(hidden=4096, inter=14336, layers=4, heads=32, kv=8, head_dim=128, vocab=128256)


def main():
    shape = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = tt.Model(tt.SHAPES[shape], True).to(dev)
    model.cos, model.sin, model.mask = model.cos.to(dev), model.sin.to(dev), model.mask.to(dev)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-5, betas=(0.9, 0.95), eps=1e-12, weight_decay=0.0)
    tokens = torch.randint(0, tt.SHAPES[shape]["vocab"], (tt.BATCH, tt.SEQ + 1), device=dev)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]

    def step():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            logits = model(inputs)
            loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="sum")
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        return time.perf_counter() - t0

    step()  # warm-up
    seconds = sorted(step() for _ in range(steps))[steps // 2]
    print(json.dumps({
        "shape": shape,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0),
        "loraR16TokensPerS": round(tt.BATCH * tt.SEQ / seconds, 1),
    }), flush=True)


if __name__ == "__main__":
    main()
