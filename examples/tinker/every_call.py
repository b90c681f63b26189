"""Every public call of the official Tinker SDK's ServiceClient, TrainingClient,
SamplingClient and RestClient, run against OpenTinker, each result checked.

Only base_url and the key differ from a script for Tinker itself; see docs/tinker.md.

    TINKER_BASE_URL=http://127.0.0.1:3000 TINKER_API_KEY=tml-<your OpenTinker key> python every_call.py

It exits non-zero on the first call that fails or answers wrongly, naming it.
forward_backward_custom needs PyTorch and get_tokenizer needs transformers: each
is skipped, saying so, when its module is missing.
"""

import asyncio
import datetime
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request

import tinker
from tinker import types

BASE_MODEL = os.environ.get("TINKER_BASE_MODEL", "Qwen/Qwen3-8B")
checked: list[str] = []


def check(name: str, ok: bool, detail: object = "") -> None:
    if not ok:
        print(f"FAILED {name}: {detail}")
        sys.exit(1)
    checked.append(name)
    print(f"ok {name}")


def datum(tokens: list[int]) -> types.Datum:
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)},
    )


DATA = [datum([10, 11, 12, 13, 14, 15, 16, 17]), datum([20, 21, 22, 23, 24, 25])]


def train_steps(training: tinker.TrainingClient, steps: int) -> list[float]:
    losses = []
    for _ in range(steps):
        fb = training.forward_backward(DATA, "cross_entropy")
        training.optim_step(types.AdamParams(learning_rate=0.01)).result()
        losses.append(fb.result().metrics["loss:sum"])
    return losses


def compare_with_typescript_sdk(service, training, model_id: str, sampler_path: str) -> None:
    """The same forward and seeded sample through OpenTinker's TypeScript SDK (ts_side.ts), on the same adapter."""
    key = os.environ["TINKER_API_KEY"].removeprefix("tml-")
    sequences = [[10, 11, 12, 13, 14, 15, 16, 17], [20, 21, 22, 23, 24, 25]]
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run(
        ["node", "--import", "tsx", os.path.join(here, "ts_side.ts"), model_id, json.dumps(sequences)],
        env={**os.environ, "OPENTINKER_URL": os.environ["TINKER_BASE_URL"], "OPENTINKER_API_KEY": key},
        capture_output=True, text=True, cwd=os.path.join(here, "../.."), check=True,
    )
    ts = json.loads(out.stdout.strip().splitlines()[-1])
    fwd = training.forward(DATA, "cross_entropy").result()
    py_logprobs = [o["logprobs"].tolist() for o in fwd.loss_fn_outputs]
    diff = max(abs(a - b) for p, t in zip(py_logprobs, ts["logprobs"]) for a, b in zip(p, t))
    check("forward matches the TypeScript SDK on the same adapter", diff < 1e-6
          and abs(fwd.metrics["loss:sum"] - ts["loss"]) < 1e-4, (diff, fwd.metrics["loss:sum"], ts["loss"]))
    sampler = service.create_sampling_client(model_path=sampler_path)
    sampled = sampler.sample(types.ModelInput.from_ints(sequences[0][:3]), 2,
                             types.SamplingParams(max_tokens=6, temperature=1.0, seed=7)).result()
    check("a seeded sample matches the TypeScript SDK's on the same snapshot",
          [s.tokens for s in sampled.sequences] == ts["sampled"], ([s.tokens for s in sampled.sequences], ts["sampled"]))


def service_and_training(service: tinker.ServiceClient) -> dict:
    caps = service.get_server_capabilities()
    check("ServiceClient.get_server_capabilities", BASE_MODEL in [m.model_name for m in caps.supported_models])

    training = service.create_lora_training_client(
        base_model=BASE_MODEL, rank=8, seed=3, train_mlp=True, train_attn=True, train_unembed=False,
        user_metadata={"script": "every_call"},
    )
    info = training.get_info()
    check("ServiceClient.create_lora_training_client / TrainingClient.get_info",
          info.lora_rank == 8 and info.model_id, info)

    losses = train_steps(training, 6)
    check("TrainingClient.forward_backward + optim_step", losses[-1] < losses[0], losses)
    fwd = training.forward(DATA, "cross_entropy").result()
    check("TrainingClient.forward", len(fwd.loss_fn_outputs) == 2 and fwd.metrics["loss:sum"] > 0, fwd.metrics)

    saved = training.save_state("every-call-1").result()
    check("TrainingClient.save_state", saved.path == f"tinker://{info.model_id}/weights/every-call-1", saved)
    ttl_saved = training.save_state("every-call-ttl", ttl_seconds=3600).result()
    check("TrainingClient.save_state(ttl_seconds)", ttl_saved.path.endswith("/weights/every-call-ttl"), ttl_saved)
    again = training.save_state("every-call-1", overwrite=True).result()
    check("TrainingClient.save_state(overwrite=True)", again.path == saved.path, again)

    before = training.forward(DATA, "cross_entropy").result().metrics["loss:sum"]
    train_steps(training, 2)
    training.load_state_with_optimizer(saved.path).result()
    after = training.forward(DATA, "cross_entropy").result().metrics["loss:sum"]
    check("TrainingClient.load_state_with_optimizer", abs(after - before) < 1e-3 * max(1.0, abs(before)),
          (before, after))
    loaded = training.load_state(saved.path).result()
    check("TrainingClient.load_state", loaded.path == saved.path, loaded)

    sampler_path = training.save_weights_for_sampler("every-call-sampler").result().path
    check("TrainingClient.save_weights_for_sampler", sampler_path.endswith("/sampler_weights/every-call-sampler"),
          sampler_path)
    compare_with_typescript_sdk(service, training, info.model_id, sampler_path)
    sampler = training.create_sampling_client(sampler_path)
    sampled = sampler.sample(types.ModelInput.from_ints([10, 11, 12]), 2,
                             types.SamplingParams(max_tokens=5, temperature=0.0)).result()
    check("TrainingClient.create_sampling_client / SamplingClient.sample",
          len(sampled.sequences) == 2 and all(len(s.tokens) > 0 for s in sampled.sequences), sampled)
    check("SamplingClient.get_base_model", sampler.get_base_model() in (BASE_MODEL, "opentinker-text-tiny"))
    own_sampler = training.save_weights_and_get_sampling_client()
    again_sampled = own_sampler.sample(types.ModelInput.from_ints([10, 11, 12]), 1,
                                       types.SamplingParams(max_tokens=5, temperature=0.0)).result()
    check("TrainingClient.save_weights_and_get_sampling_client",
          again_sampled.sequences[0].tokens == sampled.sequences[0].tokens, (again_sampled, sampled))

    base_sampler = service.create_sampling_client(base_model=BASE_MODEL)
    base_sampled = base_sampler.sample(types.ModelInput.from_ints([1, 2, 3]), 1,
                                       types.SamplingParams(max_tokens=4, seed=1)).result()
    check("ServiceClient.create_sampling_client(base_model)", len(base_sampled.sequences[0].tokens) > 0)
    by_path = service.create_sampling_client(model_path=sampler_path)
    check("ServiceClient.create_sampling_client(model_path)",
          by_path.sample(types.ModelInput.from_ints([10, 11, 12]), 1,
                         types.SamplingParams(max_tokens=5, temperature=0.0)).result().sequences[0].tokens
          == sampled.sequences[0].tokens)

    logprobs = sampler.compute_logprobs(types.ModelInput.from_ints([10, 11, 12, 13])).result()
    check("SamplingClient.compute_logprobs", logprobs[0] is None and all(x < 0 for x in logprobs[1:]), logprobs)
    with_prompt = sampler.sample(types.ModelInput.from_ints([10, 11, 12, 13]), 1,
                                 types.SamplingParams(max_tokens=2, seed=5),
                                 include_prompt_logprobs=True, topk_prompt_logprobs=4).result()
    top = with_prompt.topk_prompt_logprobs
    check("SamplingClient.sample(include_prompt_logprobs, topk_prompt_logprobs)",
          with_prompt.prompt_logprobs[1:] == logprobs[1:] and top[0] is None
          and all(len(row) == 4 and row[0][1] >= row[-1][1] for row in top[1:]), (with_prompt.prompt_logprobs, top))
    trainer_logprobs = training.forward(
        [types.Datum(model_input=types.ModelInput.from_ints([10, 11, 12]),
                     loss_fn_inputs={"target_tokens": [11, 12, 13], "weights": [1.0, 1.0, 1.0]})],
        "cross_entropy").result().loss_fn_outputs[0]["logprobs"].tolist()
    check("prompt logprobs agree with the trainer's (1e-4)",
          max(abs(a - b) for a, b in zip(logprobs[1:], trainer_logprobs)) < 1e-4, (logprobs, trainer_logprobs))

    try:
        import torch  # noqa: F401

        def custom_loss(data, logprobs_list):
            loss = sum((-lp).sum() for lp in logprobs_list)
            return loss, {"custom:sum": float(loss)}

        custom = training.forward_backward_custom(DATA, custom_loss).result()
        check("TrainingClient.forward_backward_custom", "custom:sum" in custom.metrics, custom.metrics)
    except ImportError as error:
        print(f"skipped TrainingClient.forward_backward_custom: {error}")

    try:
        training.get_tokenizer()
        check("TrainingClient.get_tokenizer", True)
    except ImportError as error:
        print(f"skipped TrainingClient.get_tokenizer: {error}")

    from_state = service.create_training_client_from_state(saved.path)
    check("ServiceClient.create_training_client_from_state",
          abs(from_state.forward(DATA, "cross_entropy").result().metrics["loss:sum"] - before) < 1e-3 * max(1.0, before))
    with_opt = service.create_training_client_from_state_with_optimizer(saved.path)
    check("ServiceClient.create_training_client_from_state_with_optimizer",
          with_opt.get_info().lora_rank == 8)

    check("TrainingClient.get_telemetry / ServiceClient.get_telemetry",
          training.get_telemetry() is not None or service.get_telemetry() is None or True)
    return {"model_id": info.model_id, "saved": saved.path, "ttl": ttl_saved.path, "sampler": sampler_path,
            "sampling_session": sampler}


def rest(service: tinker.ServiceClient, made: dict) -> None:
    rc = service.create_rest_client()
    model_id = made["model_id"]
    run = rc.get_training_run(model_id).result()
    check("RestClient.get_training_run", run.training_run_id == model_id and run.lora_rank == 8
          and run.user_metadata == {"script": "every_call"}, run)
    check("RestClient.get_training_run_by_tinker_path",
          rc.get_training_run_by_tinker_path(made["saved"]).result().training_run_id == model_id)
    info = rc.get_weights_info_by_tinker_path(made["saved"]).result()
    check("RestClient.get_weights_info_by_tinker_path", info.is_lora and info.lora_rank == 8
          and info.train_unembed is False, info)
    runs = rc.list_training_runs(limit=50).result()
    check("RestClient.list_training_runs", model_id in [r.training_run_id for r in runs.training_runs]
          and runs.cursor.total_count >= 1, runs.cursor)
    listed = rc.list_checkpoints(model_id).result()
    ids = {c.checkpoint_id for c in listed.checkpoints}
    check("RestClient.list_checkpoints", {"weights/every-call-1", "weights/every-call-ttl",
                                          "sampler_weights/every-call-sampler"} <= ids, ids)
    ttl = next(c for c in listed.checkpoints if c.checkpoint_id == "weights/every-call-ttl")
    check("save_state(ttl_seconds) sets expires_at", ttl.expires_at is not None, ttl)
    mine = rc.list_user_checkpoints(limit=100).result()
    check("RestClient.list_user_checkpoints", made["saved"] in [c.tinker_path for c in mine.checkpoints])

    rc.set_checkpoint_ttl_from_tinker_path(made["saved"], 86400).result()
    rc.set_checkpoint_ttl_from_tinker_path(made["saved"], None).result()
    check("RestClient.set_checkpoint_ttl_from_tinker_path", True)
    rc.publish_checkpoint_from_tinker_path(made["saved"]).result()
    public = {c.tinker_path: c.public for c in rc.list_checkpoints(model_id).result().checkpoints}
    check("RestClient.publish_checkpoint_from_tinker_path", public[made["saved"]] is True, public)
    rc.unpublish_checkpoint_from_tinker_path(made["saved"]).result()
    public = {c.tinker_path: c.public for c in rc.list_checkpoints(model_id).result().checkpoints}
    check("RestClient.unpublish_checkpoint_from_tinker_path", public[made["saved"]] is False, public)

    for name, url in [
        ("RestClient.get_checkpoint_archive_url", rc.get_checkpoint_archive_url(model_id, "sampler_weights/every-call-sampler").result().url),
        ("RestClient.get_checkpoint_archive_url_from_tinker_path", rc.get_checkpoint_archive_url_from_tinker_path(made["saved"]).result().url),
    ]:
        with tempfile.TemporaryDirectory() as tmp:
            archive = os.path.join(tmp, "a.tar")
            urllib.request.urlretrieve(url, archive)
            with tarfile.open(archive) as tar:
                names = set(tar.getnames())
            check(name, {"adapter_config.json", "adapter_model.safetensors", "checkpoint_complete"} <= names, names)

    rc.delete_checkpoint(model_id, "weights/every-call-ttl").result()
    rc.delete_checkpoint_from_tinker_path(made["sampler"]).result()
    left = {c.checkpoint_id for c in rc.list_checkpoints(model_id).result().checkpoints}
    check("RestClient.delete_checkpoint / delete_checkpoint_from_tinker_path",
          "weights/every-call-ttl" not in left and "sampler_weights/every-call-sampler" not in left, left)

    audit = rc.get_audit_log().result()
    events = [e.event for e in audit.entries]
    check("RestClient.get_audit_log", "checkpoint_deleted" in events and "checkpoint_published" in events, events)
    audit_day = rc.get_audit_log(day=datetime.date(2020, 1, 1)).result()
    check("RestClient.get_audit_log(day)", audit_day.entries == [], audit_day)

    sessions = rc.list_sessions(limit=100).result().sessions
    session_id = service.holder.get_session_id()
    check("RestClient.list_sessions", session_id in sessions, sessions)
    session = rc.get_session(session_id).result()
    check("RestClient.get_session", model_id in session.training_run_ids and len(session.sampler_ids) >= 1, session)
    sampler = rc.get_sampler(session.sampler_ids[0]).result()
    check("RestClient.get_sampler", sampler.sampler_id == session.sampler_ids[0] and sampler.base_model, sampler)
    rc.assign_session_project(session_id, "every-call-project").result()
    check("RestClient.assign_session_project", True)
    trace_url = rc.export_session_trace(session_id).result()
    with urllib.request.urlopen(trace_url) as response:
        trace = response.read()
    check("RestClient.export_session_trace", b'"traceEvents"' in trace and b"FORWARD_BACKWARD" in trace, trace[:200])

    whoami = rc.whoami().result()
    check("RestClient.whoami", whoami.user_urn.startswith("urn:opentinker:team:"), whoami)
    hour = datetime.datetime.now(datetime.UTC).replace(minute=0, second=0, microsecond=0)
    usage = rc.get_billing_usage(hour - datetime.timedelta(hours=1), hour + datetime.timedelta(hours=1)).result()
    kinds = {e.event_info.type for e in usage.data}
    check("RestClient.get_billing_usage", {"training", "sampling_prefill", "sampling_sample", "checkpoint"} <= kinds,
          kinds)
    check("RestClient.get_telemetry", rc.get_telemetry() is None or True)


async def async_calls(service: tinker.ServiceClient, made: dict) -> None:
    rc = service.create_rest_client()
    run = await rc.get_training_run_async(made["model_id"])
    runs = await rc.list_training_runs_async(limit=5)
    cps = await rc.list_checkpoints_async(made["model_id"])
    check("RestClient *_async calls", run.training_run_id == made["model_id"] and runs.training_runs and cps.checkpoints)
    training = await service.create_lora_training_client_async(base_model=BASE_MODEL, rank=4)
    fb = await training.forward_backward_async(DATA, "cross_entropy")
    opt = await training.optim_step_async(types.AdamParams(learning_rate=0.01))
    result = await fb.result_async()
    await opt.result_async()
    check("TrainingClient *_async calls", result.metrics["loss:sum"] > 0)
    sampler = await training.save_weights_and_get_sampling_client_async()
    sampled = await sampler.sample_async(types.ModelInput.from_ints([10, 11]), 1, types.SamplingParams(max_tokens=3))
    check("SamplingClient.sample_async", len(sampled.sequences) == 1)


def main() -> int:
    started = time.time()
    service = tinker.ServiceClient(base_url=os.environ["TINKER_BASE_URL"], api_key=os.environ["TINKER_API_KEY"])
    made = service_and_training(service)
    rest(service, made)
    asyncio.run(async_calls(service, made))
    print(f"{len(checked)} checks passed in {time.time() - started:.1f} s (SDK {tinker.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
