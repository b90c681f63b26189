"""A GRPO-style RL loop written against the official Tinker Python SDK, run against OpenTinker:
arithmetic ("What is 7 + 5? Reply with the number only.") on the built-in opentinker-text-tiny
model, tokenized with that model's own tokenizer files (byte-level BPE, read below).

Only base_url and the key differ from a script for Tinker itself; see docs/tinker.md.

    TINKER_BASE_URL=http://127.0.0.1:3000 TINKER_API_KEY=tml-<key> python rl_loop.py

Each step samples GROUPS problems GROUP_SIZE times from the latest sampler weights, rewards
exact answers, centres rewards within each group, and trains with the ppo loss (LOSS=...) on the
sampled tokens only (prompt positions carry no advantage). The policy's mean reward on held-out
problems (4 seeded draws each at temperature 1) is measured before and after; the script exits
non-zero unless it rose.
"""

import json
import os
import random
import re
import sys
import time

import tinker
from tinker import types

BASE_MODEL = os.environ.get("TINKER_BASE_MODEL", "opentinker-text-tiny")
TOKENIZER = os.environ.get(
    "TOKENIZER_JSON",
    os.path.join(os.path.dirname(__file__), "../../packages/models/built-in/opentinker-text-tiny/tokenizer.json"),
)
STEPS = int(os.environ.get("STEPS", "60"))
GROUPS = int(os.environ.get("GROUPS", "16"))
GROUP_SIZE = int(os.environ.get("GROUP_SIZE", "8"))
LEARNING_RATE = float(os.environ.get("LEARNING_RATE", "1e-3"))
VALIDATION = int(os.environ.get("VALIDATION", "128"))
VALIDATION_SAMPLES = int(os.environ.get("VALIDATION_SAMPLES", "4"))
LOSS = os.environ.get("LOSS", "ppo")
SEED = int(os.environ.get("SEED", "1"))


class ByteLevelBpe:
    """Encodes ASCII text as the built-in models' byte-level BPE tokenizer does (tokenizer.json)."""

    # The tokenizer's split pattern, with \\p{L} and \\p{N} narrowed to ASCII (every prompt here is ASCII).
    SPLIT = re.compile(
        r"'s|'t|'re|'ve|'m|'ll|'d|[^\r\nA-Za-z0-9]?[A-Za-z]+|[0-9]| ?[^\sA-Za-z0-9]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
        re.IGNORECASE,
    )

    def __init__(self, path: str) -> None:
        spec = json.load(open(path))
        self.vocab: dict[str, int] = spec["model"]["vocab"]
        merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in spec["model"]["merges"]]
        self.ranks = {pair: i for i, pair in enumerate(merges)}
        self.special = {t["content"]: t["id"] for t in spec["added_tokens"]}
        self.byte_char = self._bytes_to_unicode()
        self.id_to_token = {i: t for t, i in self.vocab.items()}
        self.char_byte = {c: b for b, c in self.byte_char.items()}

    @staticmethod
    def _bytes_to_unicode() -> dict[int, str]:
        printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
        chars, n = printable[:], 0
        for b in range(256):
            if b not in printable:
                printable.append(b)
                chars.append(256 + n)
                n += 1
        return dict(zip(printable, map(chr, chars)))

    def _bpe(self, word: list[str]) -> list[str]:
        while len(word) > 1:
            pairs = [(self.ranks.get((a, b), 1 << 30), i) for i, (a, b) in enumerate(zip(word, word[1:]))]
            rank, i = min(pairs)
            if rank == 1 << 30:
                break
            word = word[:i] + [word[i] + word[i + 1]] + word[i + 2:]
        return word

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for piece in self.SPLIT.findall(text):
            word = [self.byte_char[b] for b in piece.encode("utf-8")]
            ids.extend(self.vocab[t] for t in self._bpe(word))
        return ids

    def decode(self, ids: list[int]) -> str:
        specials = {i: t for t, i in self.special.items()}
        out = bytearray()
        for i in ids:
            if i in specials:
                continue
            out.extend(self.char_byte[c] for c in self.id_to_token[i])
        return out.decode("utf-8", errors="replace")

    def chat_prompt(self, content: str) -> list[int]:
        start, end = self.special["<|im_start|>"], self.special["<|im_end|>"]
        return [start, *self.encode(f"user\n{content}"), end, *self.encode("\n"), start, *self.encode("assistant\n")]


def problem(rng: random.Random) -> tuple[str, int]:
    a, b = rng.randint(0, 12), rng.randint(0, 12)
    op = rng.choice("+-*")
    answer = a + b if op == "+" else a - b if op == "-" else a * b
    return f"What is {a} {op} {b}? Reply with the number only.", answer


def reward(tok: ByteLevelBpe, tokens: list[int], answer: int) -> float:
    text = tok.decode(tokens).strip()
    return 1.0 if re.fullmatch(r"-?\d+", text) and int(text) == answer else 0.0


def mean_reward(sampler: tinker.SamplingClient, tok: ByteLevelBpe, problems: list[tuple[str, int]], stop: int) -> float:
    """The policy's expected reward (what RL raises): VALIDATION_SAMPLES draws per problem at temperature 1, seeded."""
    futures = [
        sampler.sample(
            types.ModelInput.from_ints(tok.chat_prompt(q)),
            VALIDATION_SAMPLES,
            types.SamplingParams(max_tokens=8, temperature=1.0, stop=[stop], seed=i),
        )
        for i, (q, _) in enumerate(problems)
    ]
    rewards = [reward(tok, s.tokens, a) for f, (_, a) in zip(futures, problems) for s in f.result().sequences]
    return sum(rewards) / len(rewards)


def main() -> int:
    tok = ByteLevelBpe(TOKENIZER)
    stop = tok.special["<|im_end|>"]
    service = tinker.ServiceClient(base_url=os.environ["TINKER_BASE_URL"], api_key=os.environ["TINKER_API_KEY"])
    training = service.create_lora_training_client(base_model=BASE_MODEL, rank=8, seed=SEED)
    rng = random.Random(SEED)
    held_out = [problem(random.Random(10_000 + i)) for i in range(VALIDATION)]
    # Held out for real: training never draws a question that validation asks.
    held_out_questions = {q for q, _ in held_out}

    def training_problem() -> tuple[str, int]:
        while True:
            drawn = problem(rng)
            if drawn[0] not in held_out_questions:
                return drawn

    sampler = training.save_weights_and_get_sampling_client()
    before = mean_reward(sampler, tok, held_out, stop)
    print(f"validation reward before: {before:.3f}")
    started = time.time()
    params = types.SamplingParams(max_tokens=8, temperature=1.0, stop=[stop])
    for step in range(STEPS):
        batch = [training_problem() for _ in range(GROUPS)]
        futures = [
            sampler.sample(types.ModelInput.from_ints(tok.chat_prompt(q)), GROUP_SIZE, params) for q, _ in batch
        ]
        data, rewards = [], []
        for (question, answer), future in zip(batch, futures):
            prompt = tok.chat_prompt(question)
            seqs = future.result().sequences
            group = [reward(tok, s.tokens, answer) for s in seqs]
            rewards.extend(group)
            mean = sum(group) / len(group)
            for seq, r in zip(seqs, group):
                if r == mean:
                    continue  # no signal in this sample
                tokens = prompt + seq.tokens
                n_prompt = len(prompt) - 1  # target positions before the first sampled token
                data.append(
                    types.Datum(
                        model_input=types.ModelInput.from_ints(tokens[:-1]),
                        loss_fn_inputs={
                            "target_tokens": tokens[1:],
                            "logprobs": [0.0] * n_prompt + list(seq.logprobs),
                            "advantages": [0.0] * n_prompt + [r - mean] * len(seq.tokens),
                        },
                    )
                )
        if data:
            fb = training.forward_backward(data, LOSS)
            training.optim_step(types.AdamParams(learning_rate=LEARNING_RATE)).result()
            fb.result()
        sampler = training.save_weights_and_get_sampling_client()
        print(f"step {step}: reward {sum(rewards) / len(rewards):.3f}, {len(data)} datums")
    after = mean_reward(sampler, tok, held_out, stop)
    print(f"validation reward after {STEPS} steps: {after:.3f} (before {before:.3f}); {time.time() - started:.0f} s")
    return 0 if after > before else 1


if __name__ == "__main__":
    sys.exit(main())
