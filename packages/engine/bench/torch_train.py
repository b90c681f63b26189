"""Side-by-side reference for `npm run bench -w @opentinker/engine`: the same
Qwen2-style model, batch and optimizer in PyTorch on this CPU. Uses Debian's
python3-torch when installed; it is not a dependency of the project.

It stays running so that its steps interleave with ours: after building the
model and one warm-up step it prints {"config": …} (its version, threads, CPU
capability, build configuration and the BLAS libraries actually loaded), then
answers each "step" line on stdin with {"stepSeconds": …} for one
forward+backward+AdamW step. End of input ends it.

usage: /usr/bin/python3 torch_train.py <small|qwen> <lora|full> <threads>
"""
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

SHAPES = {
    "small": dict(hidden=256, inter=768, layers=8, heads=8, kv=4, head_dim=32, vocab=16384),
    "qwen": dict(hidden=896, inter=4864, layers=24, heads=14, kv=2, head_dim=64, vocab=151936),
}
BATCH, SEQ, RANK, ALPHA = 8, 256, 16, 32


class Linear(torch.nn.Module):
    def __init__(self, d_in, d_out, bias, lora):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(d_out, d_in) * 0.02, requires_grad=not lora)
        self.bias = torch.nn.Parameter(torch.zeros(d_out), requires_grad=not lora) if bias else None
        self.lora = lora
        if lora:
            self.a = torch.nn.Parameter(torch.empty(RANK, d_in).uniform_(-1 / math.sqrt(d_in), 1 / math.sqrt(d_in)))
            self.b = torch.nn.Parameter(torch.zeros(d_out, RANK))

    def forward(self, x):
        y = F.linear(x, self.weight, self.bias)
        if self.lora:
            y = y + (ALPHA / RANK) * F.linear(F.linear(x, self.a), self.b)
        return y


def rms_norm(x, w, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Layer(torch.nn.Module):
    def __init__(self, s, lora):
        super().__init__()
        h, hd = s["hidden"], s["head_dim"]
        self.s = s
        self.q = Linear(h, s["heads"] * hd, True, lora)
        self.k = Linear(h, s["kv"] * hd, True, lora)
        self.v = Linear(h, s["kv"] * hd, True, lora)
        self.o = Linear(s["heads"] * hd, h, False, lora)
        self.gate = Linear(h, s["inter"], False, lora)
        self.up = Linear(h, s["inter"], False, lora)
        self.down = Linear(s["inter"], h, False, lora)
        self.n1 = torch.nn.Parameter(torch.ones(h), requires_grad=not lora)
        self.n2 = torch.nn.Parameter(torch.ones(h), requires_grad=not lora)

    def forward(self, x, cos, sin, mask):
        s = self.s
        b, t, _ = x.shape
        hd = s["head_dim"]
        xn = rms_norm(x, self.n1)
        q = self.q(xn).view(b, t, s["heads"], hd).transpose(1, 2)
        k = self.k(xn).view(b, t, s["kv"], hd).transpose(1, 2)
        v = self.v(xn).view(b, t, s["kv"], hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = s["heads"] // s["kv"]
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(hd) + mask
        out = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, -1)
        x = x + self.o(out)
        xn = rms_norm(x, self.n2)
        return x + self.down(F.silu(self.gate(xn)) * self.up(xn))


class Model(torch.nn.Module):
    def __init__(self, s, lora):
        super().__init__()
        self.embed = torch.nn.Parameter(torch.randn(s["vocab"], s["hidden"]) * 0.02, requires_grad=not lora)
        self.layers = torch.nn.ModuleList(Layer(s, lora) for _ in range(s["layers"]))
        self.norm = torch.nn.Parameter(torch.ones(s["hidden"]), requires_grad=not lora)
        inv = 1.0 / (1e6 ** (torch.arange(0, s["head_dim"], 2).float() / s["head_dim"]))
        ang = torch.outer(torch.arange(SEQ).float(), inv)
        emb = torch.cat((ang, ang), dim=-1)
        self.cos, self.sin = emb.cos(), emb.sin()
        self.mask = torch.full((SEQ, SEQ), float("-inf")).triu(1)

    def forward(self, tokens):
        x = F.embedding(tokens, self.embed)
        for layer in self.layers:
            x = layer(x, self.cos, self.sin, self.mask)
        return F.linear(rms_norm(x, self.norm), self.embed)  # tied embeddings


def loaded_blas():
    """The BLAS / LAPACK shared libraries this process has mapped (what Debian's
    libblas.so.3 alternative resolved to, not what the build asked for)."""
    found = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            name = os.path.basename(path).lower()
            if any(key in name for key in ("blas", "lapack", "mkl", "dnnl")):
                found.add(os.path.realpath(path))
    return sorted(found)


def config():
    return {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        # torch.backends.cpu arrived after 1.13 (Debian's): absent, say so rather than fail.
        "cpu_capability": (
            torch.backends.cpu.get_cpu_capability() if hasattr(torch.backends, "cpu") else "unknown (torch < 2.0)"
        ),
        "blas_loaded": loaded_blas(),
        "build": torch.__config__.show(),
    }


def main():
    shape, kind, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = Model(SHAPES[shape], kind == "lora")
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-5, betas=(0.9, 0.95), eps=1e-12, weight_decay=0.0)
    tokens = torch.randint(0, SHAPES[shape]["vocab"], (BATCH, SEQ + 1))
    inputs, targets = tokens[:, :-1], tokens[:, 1:]

    def step():
        t0 = time.perf_counter()
        logits = model(inputs)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="sum")
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return time.perf_counter() - t0

    step()  # warm-up
    print(json.dumps({"config": config()}), flush=True)
    for line in sys.stdin:
        if line.strip() != "step":
            break
        print(json.dumps({"stepSeconds": round(step(), 4)}), flush=True)


if __name__ == "__main__":
    main()
