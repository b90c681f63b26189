"""A short SFT loop written against the official Tinker Python SDK, run against OpenTinker.

Only base_url and the key differ from a script for Tinker itself; see docs/tinker.md.

    TINKER_BASE_URL=http://127.0.0.1:3000 TINKER_API_KEY=tml-<your OpenTinker key> python sft_loop.py
"""

import os
import sys

import tinker
from tinker import types

BASE_MODEL = os.environ.get("TINKER_BASE_MODEL", "Qwen/Qwen3-8B")
STEPS = int(os.environ.get("STEPS", "12"))


def datum(tokens: list[int]) -> types.Datum:
    # Next-token pairs: input z[0..n-2], targets z[1..n-1], every target trained.
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)},
    )


def main() -> int:
    service = tinker.ServiceClient(base_url=os.environ["TINKER_BASE_URL"], api_key=os.environ["TINKER_API_KEY"])
    served = [m.model_name for m in service.get_server_capabilities().supported_models]
    print("served models:", served)
    training = service.create_lora_training_client(base_model=BASE_MODEL, rank=8)
    info = training.get_info()
    print("model:", info.model_id, "base:", info.model_name, "rank:", info.lora_rank)

    data = [datum([10, 11, 12, 13, 14, 15, 16, 17]), datum([20, 21, 22, 23, 24, 25])]
    losses = []
    for step in range(STEPS):
        fwd_bwd = training.forward_backward(data, "cross_entropy")
        optim = training.optim_step(types.AdamParams(learning_rate=0.01))
        result = fwd_bwd.result()
        optim.result()
        losses.append(result.metrics["loss:sum"])
        print(f"step {step}: loss:sum {losses[-1]:.4f}")

    # forward() is forward_backward with forward_only: the loss and per-token logprobs, no update.
    forward = training.forward(data, "cross_entropy").result()
    print("forward loss:sum", forward.metrics["loss:sum"])

    # An importance-sampling step on the same tokens, with the logprobs just computed as the sampler's.
    rl_data = [
        types.Datum(
            model_input=d.model_input,
            loss_fn_inputs={
                "target_tokens": d.loss_fn_inputs["target_tokens"],
                "logprobs": out["logprobs"].tolist(),
                "advantages": [1.0] * len(out["logprobs"].tolist()),
            },
        )
        for d, out in zip(data, forward.loss_fn_outputs)
    ]
    rl = training.forward_backward(rl_data, "importance_sampling").result()
    print("importance_sampling metrics:", rl.metrics)

    path = training.save_weights_for_sampler("sft-final").result().path
    print("sampler weights:", path)
    try:
        sampler = service.create_sampling_client(model_path=path)
        sample = sampler.sample(
            prompt=types.ModelInput.from_ints([10, 11, 12]),
            num_samples=2,
            sampling_params=types.SamplingParams(max_tokens=6, temperature=0.0),
        ).result()
        for seq in sample.sequences:
            print("sampled:", seq.tokens, seq.stop_reason)
    except Exception as error:  # noqa: BLE001 - report and go on: the SFT check stands on its own
        print("sampling failed:", error)
        return 2

    if not losses[-1] < losses[0] * 0.9:
        print(f"loss did not fall: {losses[0]:.4f} -> {losses[-1]:.4f}")
        return 1
    print(f"loss fell: {losses[0]:.4f} -> {losses[-1]:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
