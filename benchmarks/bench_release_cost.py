"""What the release size costs, measured on the CPU before a GPU is lent (issue 26, part 4).

    nice -n 19 .venv/bin/python benchmarks/bench_release_cost.py [--layers 1,2,4] [--threads 1]
        [--decode-threads 1] [--mem-cap-gb 12] [--flow-steps 10] [--batch 8] [--repeats 1]
        [--skip-decode] [--skip-model] [--tiny]

Figures and how they were made: docs/molmoact2.md ("What the release size costs"). Wall and
process CPU time are both printed: on a shared machine the CPU time is the steadier one.

(a) **Decode step at the release vocabulary** (152064 + 128 = 152192 ids): per step, a plain
    full-vocabulary argmax (what the reference decode does) against the grammar-masked decode's
    own work (the engine's `_masked_choice`: table lookup, masked argmax over the action slice,
    advance), at batch 1 and 8, on random logits; and, for scale, the lm_head matmul that makes
    those logits. The engine's masked loop also takes the full argmax every step (it counts
    interventions against greedy), so its step costs argmax + mask.

(b) **A release-shaped random MolmoAct2 in bf16, one batch-`--batch` flow predict** through the
    engine's `MolmoAct2Policy.predict_batch` (two 224x224 cameras, lerobot's default image
    processor: 378-px crops, overlap-and-resize-c2). Built directly in bf16 (default dtype
    bf16 while constructing: no fp32 copy is ever allocated). Each depth runs in its own child
    process, so `ru_maxrss` is that model's peak RSS. The full release (36 text layers, ~5.5 B
    parameters, ~11 GB of bf16 weights alone) does not fit this shared machine's budget, so the
    model is measured at `--layers` text layers (the action expert has as many, as the config
    requires), with the published widths, ViT, embeddings and lm_head in full, and peak RSS and
    time are fitted linearly in layers and extrapolated to the full depth (printed as such).
    A child is capped (address space and an RSS watchdog) at `--mem-cap-gb`; a depth whose
    bf16 parameters alone exceed the cap is not run.

The dimensions (RELEASE below) are the published Molmo2-4B/Molmo2-ER backbone's config.json
(text, ViT, adapter; the release fine-tunes that backbone) and lerobot 0.6.1's action-expert
defaults (hidden 1024, 16 heads, one layer per text layer); see docs/molmoact2.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

RELEASE_VOCAB = 152064 + 128  # lerobot's MolmoAct2TextConfig default vocab_size + additional_vocab_size


@dataclass(frozen=True)
class Shape:
    """The sizes of a random MolmoAct2 (the release's by default)."""

    text_hidden: int = 2560
    text_layers: int = 36
    text_heads: int = 32
    text_kv_heads: int = 8
    text_head_dim: int = 128
    text_intermediate: int = 9728
    vocab_size: int = 152064
    additional_vocab: int = 128
    vit_hidden: int = 1152
    vit_intermediate: int = 4304
    vit_layers: int = 27
    vit_heads: int = 16
    vit_head_dim: int = 72
    vit_layer_taps: tuple[int, int] = (-3, -9)
    adapter_intermediate: int = 9728
    image_px: int = 378
    max_crops: int = 8
    crop_mode: str = "overlap-and-resize-c2"
    expert_hidden: int = 1024
    expert_heads: int = 16
    expert_ffn_multiple_of: int = 256
    expert_timestep_dim: int = 256
    camera_px: int = 224


RELEASE = Shape()
# A shape small enough for a test: the script's code path in seconds.
TINY = Shape(
    text_hidden=64,
    text_layers=2,
    text_heads=4,
    text_kv_heads=2,
    text_head_dim=16,
    text_intermediate=128,
    vocab_size=4096,
    additional_vocab=128,
    vit_hidden=32,
    vit_intermediate=64,
    vit_layers=3,
    vit_heads=2,
    vit_head_dim=16,
    vit_layer_taps=(-1, -3),
    adapter_intermediate=64,
    image_px=112,
    max_crops=1,
    crop_mode="resize",
    expert_hidden=32,
    expert_heads=2,
    expert_ffn_multiple_of=32,
    expert_timestep_dim=32,
    camera_px=64,
)


# --------------------------------------------------------------------------------------------- (a)


def decode_step_cost(vocab: int, batch_sizes=(1, 8), *, hidden: int = 2560, n: int = 300, lm_head: bool = True) -> dict:
    """Per-step microseconds of the full argmax, the masked choice and (for scale) the lm_head."""
    import torch

    from engine.policies.molmoact2.fast import load_fast
    from engine.policies.molmoact2.grammar import GrammarMask
    from engine.policies.molmoact2.policy import MolmoAct2Policy, TokenIds, _DecodeRow
    from engine.policies.molmoact2.tiny import ACTION_DIM, CHUNK_HORIZON, _fit_fast_tokenizer

    with tempfile.TemporaryDirectory(prefix="release-cost-fast-") as tmp:  # the tiny model's FAST, fitted alone
        fast = _fit_fast_tokenizer(0)
        fast.tokenizer.save_pretrained(tmp)
        Path(tmp, "processor_config.json").write_text(json.dumps(fast.fontaine_config))
        codec = load_fast(Path(tmp), horizon=CHUNK_HORIZON, action_dim=ACTION_DIM)
    grammar = GrammarMask(codec)
    action0 = vocab - 2 * codec.n_bpe  # where the action ids sit does not change the cost
    ids = TokenIds(start=action0 - 3, end=action0 - 2, eos=action0 - 1, action0=action0, num_action=codec.n_bpe)
    chooser = type("Chooser", (), {"token_ids": ids, "grammar": grammar})()
    action = slice(action0, action0 + codec.n_bpe)
    gen = torch.Generator().manual_seed(0)
    out: dict = {"vocab": vocab, "fast_bpe_vocab": codec.n_bpe, "steps_timed": n, "threads": torch.get_num_threads()}
    for batch in batch_sizes:
        for dtype in (torch.float32, torch.bfloat16):
            logits = [torch.randn((batch, vocab), generator=gen).to(dtype) for _ in range(8)]
            rows = [_DecodeRow(grammar.start(), tokens=[ids.start]) for _ in range(batch)]

            def argmax_step(i, logits=logits):
                return logits[i % 8].argmax(-1).tolist()

            def mask_step(i, logits=logits, rows=rows):
                step = logits[i % 8]
                for r, row in enumerate(rows):
                    if grammar.complete(row.state):
                        row.state, row.tokens = grammar.start(), [ids.start]
                    row.tokens.append(MolmoAct2Policy._masked_choice(chooser, row, step[r, action]))

            name = "fp32" if dtype == torch.float32 else "bf16"
            full, full_cpu = _per_call(argmax_step, n)
            masked, masked_cpu = _per_call(mask_step, n)
            out[f"batch{batch}_{name}"] = {
                "full_argmax_us": full * 1e6,
                "mask_us": masked * 1e6,
                "engine_masked_step_us": (full + masked) * 1e6,
                "full_argmax_cpu_us": full_cpu * 1e6,
                "mask_cpu_us": masked_cpu * 1e6,
                "engine_masked_step_cpu_us": (full_cpu + masked_cpu) * 1e6,
            }
        if lm_head:
            weight = torch.randn((vocab, hidden), generator=gen, dtype=torch.float32).to(torch.bfloat16)
            h = torch.randn((batch, hidden), generator=gen).to(torch.bfloat16)
            wall, cpu = _per_call(lambda i, h=h, w=weight: torch.nn.functional.linear(h, w), 20)
            out[f"batch{batch}_lm_head_bf16_us"] = wall * 1e6
            out[f"batch{batch}_lm_head_bf16_cpu_us"] = cpu * 1e6
            del weight
    return out


def _per_call(fn, n: int) -> tuple[float, float]:
    """Median over 3 rounds of n calls: (wall, process CPU) seconds per call. On a shared machine
    the CPU time is the steadier figure (time spent waiting for a core is not in it)."""
    for i in range(min(20, n)):
        fn(i)
    walls, cpus = [], []
    for _ in range(3):
        started, cpu = time.perf_counter(), time.process_time()
        for i in range(n):
            fn(i)
        walls.append((time.perf_counter() - started) / n)
        cpus.append((time.process_time() - cpu) / n)
    return statistics.median(walls), statistics.median(cpus)


# --------------------------------------------------------------------------------------------- (b)


def model_config(shape: Shape, layers: int, ids: dict, eos: int, pad: int):
    from lerobot.policies.molmoact2.molmoact2_hf_model.configuration_molmoact2 import (
        MolmoAct2ActionExpertConfig,
        MolmoAct2AdapterConfig,
        MolmoAct2Config,
        MolmoAct2TextConfig,
        MolmoAct2VitConfig,
    )

    from engine.policies.molmoact2.tiny import token_config

    text = MolmoAct2TextConfig(
        hidden_size=shape.text_hidden,
        num_attention_heads=shape.text_heads,
        num_key_value_heads=shape.text_kv_heads,
        head_dim=shape.text_head_dim,
        vocab_size=shape.vocab_size,
        additional_vocab_size=shape.additional_vocab,
        num_hidden_layers=layers,
        intermediate_size=shape.text_intermediate,
        qkv_bias=False,
        use_qk_norm=True,
        qk_norm_type="qwen3",
        rope_theta=5_000_000.0,
        max_position_embeddings=36864,
    )
    vit = MolmoAct2VitConfig(
        hidden_size=shape.vit_hidden,
        intermediate_size=shape.vit_intermediate,
        num_hidden_layers=shape.vit_layers,
        num_attention_heads=shape.vit_heads,
        num_key_value_heads=shape.vit_heads,
        head_dim=shape.vit_head_dim,
        image_default_input_size=(shape.image_px, shape.image_px),
        image_patch_size=14,
        image_num_pos=(shape.image_px // 14) ** 2,
    )
    adapter = MolmoAct2AdapterConfig(
        vit_layers=shape.vit_layer_taps,
        pooling_attention_mask=True,
        hidden_size=shape.vit_hidden,
        num_attention_heads=shape.vit_heads,
        num_key_value_heads=shape.vit_heads,
        head_dim=shape.vit_head_dim,
        intermediate_size=shape.adapter_intermediate,
        text_hidden_size=shape.text_hidden,
    )
    expert = MolmoAct2ActionExpertConfig(
        hidden_size=shape.expert_hidden,
        num_layers=layers,
        num_heads=shape.expert_heads,
        ffn_multiple_of=shape.expert_ffn_multiple_of,
        timestep_embed_dim=shape.expert_timestep_dim,
    )
    return MolmoAct2Config(vit_config=vit, adapter_config=adapter, text_config=text, action_expert_config=expert,
                           **token_config(ids, eos=eos, pad=pad))


def count_parameters(shape: Shape, layers: int) -> int:
    """Parameters of the model at `layers` text layers, counted on the meta device (nothing allocated)."""
    import torch
    from lerobot.policies.molmoact2.molmoact2_hf_model.modeling_molmoact2 import MolmoAct2ForConditionalGeneration

    from engine.policies.molmoact2.tiny import _build_text_tokenizer

    tokenizer, ids = _build_text_tokenizer()
    config = model_config(shape, layers, ids, tokenizer.eos_token_id, tokenizer.pad_token_id)
    with torch.device("meta"):
        model = MolmoAct2ForConditionalGeneration(config)
    return sum(p.numel() for p in model.parameters())


def measure_depth(shape: Shape, layers: int, *, batch: int, flow_steps: int, threads: int, cap_bytes: int | None, repeats: int = 1) -> dict:
    """Build the model at `layers` text layers in bf16 and run `repeats` batch flow predicts (the
    first is the headline: cold, as a fresh worker's). Run in a child process with a cap."""
    if cap_bytes is not None:
        _cap_memory(cap_bytes)
    import torch

    torch.set_num_threads(threads)
    from lerobot.policies.molmoact2.molmoact2_hf_model.modeling_molmoact2 import (
        MolmoAct2ForConditionalGeneration,
        _RobotStats,
    )

    from engine.policies.convmap import shim as convmap
    from engine.policies.molmoact2 import checkpoint as ckptmod
    from engine.policies.molmoact2 import policy as policymod
    from engine.policies.molmoact2.tiny import NORM_TAG, _build_text_tokenizer, _norm_stats, _processor_config

    rss_imported = _rss()
    tokenizer, ids = _build_text_tokenizer()
    config = model_config(shape, layers, ids, tokenizer.eos_token_id, tokenizer.pad_token_id)
    with tempfile.TemporaryDirectory(prefix="release-cost-proc-") as tmp:
        tokenizer.save_pretrained(tmp)
        proc = _processor_config(shape.image_px)
        proc["image_processor"].update(max_crops=shape.max_crops, crop_mode=shape.crop_mode)
        Path(tmp, "processor_config.json").write_text(json.dumps(proc))
        processor = ckptmod.load_processor(Path(tmp))

    started = time.perf_counter()
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)  # every parameter is born bf16: no fp32 copy, ever
    try:
        model = MolmoAct2ForConditionalGeneration(config)
    finally:
        torch.set_default_dtype(previous)
    model.eval()
    model.requires_grad_(False)
    build_s = time.perf_counter() - started
    dtypes = sorted({str(p.dtype) for p in model.parameters()})
    rss_built = _rss()

    payload = _norm_stats()
    policy = policymod.MolmoAct2Policy(
        model=model,
        processor=processor,
        robot_stats=_RobotStats(payload),
        norm_tag=NORM_TAG,
        metadata=payload["metadata_by_tag"][NORM_TAG],
        pathway="flow",
        decode="flow",
        convmap=convmap.PRESETS["official"],
        flow_steps=flow_steps,
        task=None,
        chunk_horizon=30,
        action_dim=6,
        codec=None,
        description={},
        action_horizon=30,
    )
    from bench_molmoact2 import _obs  # the CPU benchmark's random observations (this folder is on sys.path)

    observations = [_obs(i, shape.camera_px) for i in range(batch)]
    seq_len = int(policy._model_inputs(observations)["input_ids"].shape[1])

    flow_walls, flow_cpus = [], []
    integrate = policymod.integrate_flow

    def timed_integrate(*args, **kwargs):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return integrate(*args, **kwargs)
        finally:
            flow_walls.append(time.perf_counter() - t0)
            flow_cpus.append(time.process_time() - c0)

    vision = _time_modules([model.model.vision_backbone])
    blocks = _time_modules(list(model.model.transformer.blocks))
    policymod.integrate_flow = timed_integrate
    walls, cpus, parts = [], [], []
    try:
        for _ in range(repeats):
            for acc in (vision, blocks):
                acc.update(wall=0.0, cpu=0.0)
            started, cpu = time.perf_counter(), time.process_time()
            chunks = policy.predict_batch(observations)
            walls.append(time.perf_counter() - started)
            cpus.append(time.process_time() - cpu)
            parts.append({f"{name}_{k}": acc[k] for name, acc in (("vision", vision), ("blocks", blocks)) for k in ("wall", "cpu")})
    finally:
        policymod.integrate_flow = integrate
    assert len(chunks) == batch and all(c.targets_rad.shape == (30, 6) for c in chunks)
    return {
        "layers": layers,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "param_dtypes": dtypes,
        "prompt_tokens_per_row": seq_len,
        "build_s": build_s,
        "predict_s": walls[0],
        "predict_cpu_s": cpus[0],
        "flow_loop_s": flow_walls[0],
        "flow_loop_cpu_s": flow_cpus[0],
        "vision_s": parts[0]["vision_wall"],
        "vision_cpu_s": parts[0]["vision_cpu"],
        "text_blocks_s": parts[0]["blocks_wall"],
        "text_blocks_cpu_s": parts[0]["blocks_cpu"],
        "predict_again_s": walls[-1] if repeats > 1 else None,
        "flow_loop_again_s": flow_walls[-1] if repeats > 1 else None,
        "rss_imported_gb": rss_imported / 1e9,
        "rss_built_gb": rss_built / 1e9,
        "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9,
        "threads": torch.get_num_threads(),
    }


def _time_modules(modules) -> dict:
    """Accumulates the wall and CPU seconds spent inside `modules` (called one after another). The
    per-layer cost at depth k is the text blocks' sum / k: a steadier slope on a shared machine
    than differencing whole predicts."""
    acc = {"wall": 0.0, "cpu": 0.0, "open": (0.0, 0.0)}

    def pre(_module, _args):
        acc["open"] = (time.perf_counter(), time.process_time())

    def post(_module, _args, _out):
        t0, c0 = acc["open"]
        acc["wall"] += time.perf_counter() - t0
        acc["cpu"] += time.process_time() - c0

    for module in modules:
        module.register_forward_pre_hook(pre)
        module.register_forward_hook(post)
    return acc


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _cap_memory(cap_bytes: int) -> None:
    """Never take the shared machine down: bound new address space, and kill self past the RSS cap."""
    with open("/proc/self/statm") as f:
        virtual = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    limit = virtual + cap_bytes + (8 << 30)  # torch/oneDNN reserve address space they never touch
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    def watchdog():
        while True:
            if _rss() > cap_bytes:
                print(f"release_cost: RSS passed the cap of {cap_bytes / 1e9:.1f} GB; stopping", file=sys.stderr, flush=True)
                os._exit(3)
            time.sleep(0.05)

    threading.Thread(target=watchdog, daemon=True).start()


def _fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares y = a + b x."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return my - b * mx, b


def _child(argv: list[str]) -> int:
    args = json.loads(argv[0])
    shape = Shape(**{**args["shape"], "vit_layer_taps": tuple(args["shape"]["vit_layer_taps"])})
    result = measure_depth(
        shape,
        args["layers"],
        batch=args["batch"],
        flow_steps=args["flow_steps"],
        threads=args["threads"],
        cap_bytes=args["cap_bytes"],
        repeats=args["repeats"],
    )
    print("RESULT " + json.dumps(result), flush=True)
    return 0


def run_depth(
    shape: Shape, layers: int, *, batch: int, flow_steps: int, threads: int, cap_bytes: int, timeout_s: float, repeats: int
) -> dict | None:
    payload = json.dumps(
        {
            "shape": asdict(shape),
            "layers": layers,
            "batch": batch,
            "flow_steps": flow_steps,
            "threads": threads,
            "cap_bytes": cap_bytes,
            "repeats": repeats,
        }
    )
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--child", payload], capture_output=True, text=True, timeout=timeout_s, env=env, cwd=root
        )
    except subprocess.TimeoutExpired:
        print(f"  {layers} layers: no result within {timeout_s:.0f} s (stopped)")
        return None
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
    print(f"  {layers} layers: failed (exit {done.returncode}): {' | '.join(tail)}")
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return _child(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", default="1,2,4", help="text (and action-expert) layers to measure at")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--flow-steps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1, help="torch threads for the model (b)")
    parser.add_argument("--decode-threads", type=int, default=1, help="torch threads for (a); 1 is the engine's CPU default")
    parser.add_argument("--repeats", type=int, default=1, help="predicts per depth; the first is the headline")
    parser.add_argument("--mem-cap-gb", type=float, default=12.0)
    parser.add_argument("--timeout-s", type=float, default=600.0, help="per depth")
    parser.add_argument("--skip-decode", action="store_true")
    parser.add_argument("--skip-model", action="store_true")
    parser.add_argument("--tiny", action="store_true", help="a tiny shape: checks the script in seconds")
    args = parser.parse_args(argv)
    shape = TINY if args.tiny else RELEASE

    import torch

    torch.set_num_threads(args.threads)
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 1e9:.1f} GB RAM; torch {torch.__version__}, "
        f"{args.threads} threads"
    )

    if not args.skip_decode:
        vocab = shape.vocab_size + shape.additional_vocab
        torch.set_num_threads(args.decode_threads)
        cost = decode_step_cost(vocab, n=30 if args.tiny else 300, hidden=shape.text_hidden)
        torch.set_num_threads(args.threads)
        print(
            f"(a) decode step at vocabulary {vocab} (FAST BPE {cost['fast_bpe_vocab']}), {args.decode_threads} torch "
            "thread(s), microseconds per step:"
        )
        print("    (each cell: wall / process CPU time)")
        print(f"    {'batch':>5} {'logits':>6} {'full argmax':>17} {'mask alone':>17} {'engine masked step':>19}")
        for key, row in cost.items():
            if key.startswith("batch") and isinstance(row, dict):
                b, dt = key[5:].split("_")
                cells = [f"{row[k + '_us']:.0f} / {row[k + '_cpu_us']:.0f}" for k in ("full_argmax", "mask", "engine_masked_step")]
                print(f"    {b:>5} {dt:>6} {cells[0]:>17} {cells[1]:>17} {cells[2]:>19}")
        for b in (1, 8):
            if f"batch{b}_lm_head_bf16_us" in cost:
                print(
                    f"    for scale: the lm_head matmul ({shape.text_hidden} x {vocab}, bf16) at batch {b}: "
                    f"{cost[f'batch{b}_lm_head_bf16_us']:.0f} / {cost[f'batch{b}_lm_head_bf16_cpu_us']:.0f} us per step"
                )
        print("    (engine masked step = full argmax, which the masked loop keeps to count interventions, + mask)")

    if not args.skip_model:
        full_params = count_parameters(shape, shape.text_layers)
        print(
            f"(b) {'release-shaped' if not args.tiny else 'tiny'} MolmoAct2: {full_params / 1e9:.3f} B parameters "
            f"at {shape.text_layers} text layers = {full_params * 2 / 1e9:.2f} GB of bf16 weights"
        )
        cap = int(args.mem_cap_gb * 1e9)
        depths = [int(k) for k in args.layers.split(",")]
        rows = []
        for k in depths:
            params = count_parameters(shape, k)
            if params * 2 > cap:
                print(f"  {k} layers: {params * 2 / 1e9:.1f} GB of bf16 weights alone exceed the {args.mem_cap_gb} GB cap; not run")
                continue
            result = run_depth(
                shape,
                k,
                batch=args.batch,
                flow_steps=args.flow_steps,
                threads=args.threads,
                cap_bytes=cap,
                timeout_s=args.timeout_s,
                repeats=args.repeats,
            )
            if result is None:
                continue
            result["bf16_weights_gb"] = result["parameters"] * 2 / 1e9
            rows.append(result)
            print(
                f"  measured at {k} text layers: {result['parameters'] / 1e9:.3f} B params "
                f"({result['bf16_weights_gb']:.2f} GB bf16, dtypes {','.join(result['param_dtypes'])}); "
                f"built in {result['build_s']:.1f} s; batch-{args.batch} flow predict "
                f"(euler-{args.flow_steps}, {result['prompt_tokens_per_row']} prompt tokens a row) "
                f"{result['predict_s']:.1f} s wall / {result['predict_cpu_s']:.1f} s CPU, of which flow loop "
                f"{result['flow_loop_s']:.2f} s wall / {result['flow_loop_cpu_s']:.2f} s CPU"
                + (
                    f" (again: {result['predict_again_s']:.1f} s, flow loop {result['flow_loop_again_s']:.2f} s)"
                    if result["predict_again_s"] is not None
                    else ""
                )
                + "; "
                f"RSS after imports {result['rss_imported_gb']:.2f} GB, after build {result['rss_built_gb']:.2f} GB, "
                f"peak {result['peak_rss_gb']:.2f} GB",
                flush=True,
            )
            print(
                f"    inside it: vision backbone {result['vision_s']:.1f} s wall / {result['vision_cpu_s']:.1f} s CPU; "
                f"{k} text block(s) {result['text_blocks_s']:.1f} s wall / {result['text_blocks_cpu_s']:.1f} s CPU",
                flush=True,
            )
        if len(rows) >= 2:
            n = shape.text_layers
            xs = [r["layers"] for r in rows]
            print(f"  extrapolated linearly in layers (least squares over {xs}) to {n} layers:")
            keys = [
                ("peak_rss_gb", "peak RSS", "GB"),
                ("predict_s", "batch predict wall", "s"),
                ("flow_loop_s", "its flow loop wall", "s"),
                ("predict_cpu_s", "batch predict CPU", "s"),
                ("flow_loop_cpu_s", "its flow loop CPU", "s"),
            ]
            if all(r["predict_again_s"] is not None for r in rows):
                keys += [("predict_again_s", "predict again (warm)", "s"), ("flow_loop_again_s", "its flow loop", "s")]
            for key, label, unit in (*keys, ("bf16_weights_gb", "bf16 weights", "GB")):
                a, b = _fit(xs, [r[key] for r in rows])
                print(f"    {label:>20}: {a + b * n:8.2f} {unit}  (= {a:.2f} + {b:.3f} per layer)")
            print(f"    (exact bf16 weights at {n} layers, counted: {full_params * 2 / 1e9:.2f} GB)")
        if rows:
            n = shape.text_layers
            print(f"  extrapolated block-wise to {n} layers (per depth k: the k text blocks' own time and the flow")
            print("  loop scaled by n/k; peak RSS plus the extra bf16 weights, counted):")
            for r in rows:
                k, scale = r["layers"], shape.text_layers / r["layers"] - 1
                wall = r["predict_s"] + scale * (r["text_blocks_s"] + r["flow_loop_s"])
                cpu = r["predict_cpu_s"] + scale * (r["text_blocks_cpu_s"] + r["flow_loop_cpu_s"])
                flow = r["flow_loop_cpu_s"] * (scale + 1)
                rss = r["peak_rss_gb"] + (full_params - r["parameters"]) * 2 / 1e9
                print(
                    f"    from {k} layer(s): predict {wall:.0f} s wall / {cpu:.0f} s CPU (flow loop {flow:.1f} s CPU), "
                    f"peak RSS {rss:.1f} GB"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
