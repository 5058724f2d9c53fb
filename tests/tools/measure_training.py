#!/usr/bin/env python3
"""Measure fine-tuning peaks and speed on a real GPU, as calibration rows for rigfit.

Builds models of real architectures from their config.json fields with random weights
(nothing is downloaded), runs a few optimizer steps per case with the Hugging Face stack
(transformers + peft; bitsandbytes for QLoRA and 8-bit optimizers when it is installed), and
writes one CSV row per case: the optimizer, torch.cuda.max_memory_reserved() and
max_memory_allocated(), the CUDA context and other non-PyTorch memory (the device's used memory
at the peak minus what PyTorch reserved), and tokens/s over the timed steps and of each step.
A case that runs out of memory is a row too ("OOM"), because the largest setting that fits is
what the estimator predicts.

--calibration-out FILE also appends each finished case to FILE in the columns of
tests/data/calibration/training_memory.csv (model, method, bits, batch_size, seq_len,
grad_checkpointing, peak_gib as the reserved peak, framework, source, gpu, value_as_reported
with both peaks, extra_settings with the optimizer, attention and tokens/s), so that a lent GPU
adds calibration rows in one call:

    python3 tests/tools/measure_training.py --cases tests/tools/training_cases_optimizers.txt \
        --out build/training_runs.csv \
        --calibration-out tests/data/calibration/training_memory.csv

--optimizer takes the Hugging Face Trainer's optim names, as rigfit's estimate does:
adamw_torch_fused (the Trainer's default; torch.optim.AdamW(fused=True)), adamw_torch
(torch.optim.AdamW with foreach, torch's own default on CUDA, which the rows of
tests/fixtures/training/gpu_peaks.csv ran as "adamw"), adamw_8bit and paged_adamw_8bit
(bitsandbytes), adafactor (transformers' Adafactor as the Trainer makes it) and sgd.

Not run by the tests: it needs a CUDA GPU. Example:

    python3 tests/tools/measure_training.py --models llama-3.1-8b,qwen2.5-7b \
        --methods lora,full --seq-lens 2048,8192,16384,24576 --checkpointing on,off \
        --attention sdpa,eager --out build/training_runs.csv

--cases FILE runs the cases listed in FILE, one a line, in that order, instead of the grid the
other options span (tests/tools/training_cases.txt is the list measured for rigfit's
calibration): model method seq_len checkpointing attention, then optional key=value fields
batch_size, lora_targets, lora_rank and optimizer. --budget-s stops starting cases after that many
seconds, so that a run on a lent GPU ends with every finished row written. --device cpu with
--layers 2 --vocab 1024 runs the same code on a CPU in seconds, to check it before a GPU run (no memory
columns then).

With --least-memory it also finds, for each case that ran, the least memory PyTorch's allocator
runs it in (least_gib): it runs the case again under torch.cuda.set_per_process_memory_fraction
caps, bisecting between the allocated and the reserved peaks to within --least-step-gib. The
allocator frees its cached blocks and retries before it gives up, so this is what a card
smaller than the reserved peak needs: least_gib plus non_torch_gib is what rigfit's
memory.total_bytes (what fits) stands for, where peak_gib plus non_torch_gib is what a card
with room to spare shows held (memory.reserved_bytes). Each case then costs about log2((peak -
allocated) / step) runs more.

With --record-allocator it also records the CUDA caching allocator's own trace and replays it
with caching_allocator.py (replayed_reserved_gib): set against peak_gib, that checks the
replay which trace_step.py's CPU traces rely on.

Columns follow tests/data/calibration/training_memory.csv where they exist (model, method,
bits, batch_size, seq_len, grad_checkpointing, peak_gib, framework, gpu) and add what the
estimator needs to reproduce the run: the architecture and parameter counts, as
tests/fixtures/training/gpu_peaks.csv holds them (that file adds in_band, rigfit's verdict).
"""

import argparse
import contextlib
import csv
import datetime
import gc
import os
import sys
import time

# Architectures as their config.json files give them (Hugging Face model repositories).
CONFIGS = {
    "llama-3.2-1b": dict(model_type="llama", hidden_size=2048, intermediate_size=8192,
                         num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
                         head_dim=64, vocab_size=128256, tie_word_embeddings=True,
                         max_position_embeddings=131072, rope_theta=500000.0),
    "llama-3.2-3b": dict(model_type="llama", hidden_size=3072, intermediate_size=8192,
                         num_hidden_layers=28, num_attention_heads=24, num_key_value_heads=8,
                         head_dim=128, vocab_size=128256, tie_word_embeddings=True,
                         max_position_embeddings=131072, rope_theta=500000.0),
    "llama-3.1-8b": dict(model_type="llama", hidden_size=4096, intermediate_size=14336,
                         num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                         head_dim=128, vocab_size=128256, tie_word_embeddings=False,
                         max_position_embeddings=131072, rope_theta=500000.0),
    "qwen2.5-7b": dict(model_type="qwen2", hidden_size=3584, intermediate_size=18944,
                       num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4,
                       vocab_size=152064, tie_word_embeddings=False,
                       max_position_embeddings=32768, rope_theta=1000000.0),
    "qwen2.5-14b": dict(model_type="qwen2", hidden_size=5120, intermediate_size=13824,
                        num_hidden_layers=48, num_attention_heads=40, num_key_value_heads=8,
                        vocab_size=152064, tie_word_embeddings=False,
                        max_position_embeddings=32768, rope_theta=1000000.0),
    "mistral-7b-v0.3": dict(model_type="mistral", hidden_size=4096, intermediate_size=14336,
                            num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                            vocab_size=32768, tie_word_embeddings=False,
                            max_position_embeddings=32768, sliding_window=None),
}

FIELDS = ["model", "n_layers", "hidden", "intermediate", "n_heads", "n_kv_heads", "head_dim",
          "vocab", "tied", "params", "trainable_params", "method", "bits", "precision", "optimizer", "batch_size", "seq_len",
          "grad_checkpointing", "attention", "lora_rank", "lora_targets", "lora_dropout",
          "peak_gib", "allocated_gib", "least_gib", "non_torch_gib", "replayed_reserved_gib",
          "tokens_per_s",
          "tokens_per_s_steps", "framework", "gpu", "torch", "transformers", "peft", "status",
          "notes"]

# The columns of tests/data/calibration/training_memory.csv, for --calibration-out.
CALIBRATION_FIELDS = ["model", "method", "bits", "batch_size", "seq_len", "grad_checkpointing",
                      "peak_gib", "framework", "source", "gpu", "value_as_reported",
                      "extra_settings", "notes"]

# The Trainer's optim names this script runs (rigfit's estimate takes the same); "adamw" is
# what earlier rows called torch's foreach AdamW.
OPTIMIZERS = ("adamw_torch_fused", "adamw_torch", "adamw_8bit", "paged_adamw_8bit", "adafactor",
              "sgd", "adamw")

GIB = 1024.0 ** 3


def check_models(tool, models):
    """Exits with a one-line message when a name of the comma-separated models is unknown."""
    for name in models.split(","):
        if name not in CONFIGS:
            sys.exit("%s: unknown model %s (known: %s)" % (tool, name, ", ".join(sorted(CONFIGS))))


@contextlib.contextmanager
def open_rows(path, fields):
    """Opens the CSV at path for appending rows (writing the header to a new file); yields
    the file and its csv.DictWriter."""
    new = not os.path.exists(path)
    if not new:
        with open(path, newline="") as f:
            header = next(csv.reader(f), None)
        if header and header != fields:
            sys.exit("measure_training: %s has other columns than this version writes; "
                     "write to a new file" % path)
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        if new:
            w.writeheader()
        yield f, w


def wrap_lora(peft, model, args):
    """PEFT's LoRA on args.lora_targets (all-linear or q_proj+v_proj...), rank args.lora_rank,
    alpha twice the rank, dropout args.lora_dropout."""
    targets = args.lora_targets
    targets = "all-linear" if targets == "all-linear" else targets.split("+")
    lc = peft.LoraConfig(r=args.lora_rank, lora_alpha=2 * args.lora_rank,
                         lora_dropout=args.lora_dropout, target_modules=targets,
                         task_type="CAUSAL_LM")
    return peft.get_peft_model(model, lc)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="llama-3.1-8b")
    p.add_argument("--methods", default="lora,full",
                   help="lora, qlora (needs bitsandbytes), full (bf16) and full_amp")
    p.add_argument("--seq-lens", default="2048,8192")
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--checkpointing", default="on,off")
    p.add_argument("--attention", default="sdpa", help="sdpa, eager, flash_attention_2")
    p.add_argument("--optimizer", default="adamw_torch_fused", choices=OPTIMIZERS,
                   help="the Trainer's optim name (default adamw_torch_fused, its default); "
                        "adamw is the earlier name of adamw_torch (foreach)")
    p.add_argument("--lora-rank", type=int, default=16)
    p.add_argument("--lora-dropout", type=float, default=0.05)
    p.add_argument("--lora-targets", default="all-linear",
                   help="all-linear or a comma-free list such as q_proj+v_proj")
    p.add_argument("--steps", type=int, default=4, help="optimizer steps; the first is untimed")
    p.add_argument("--least-memory", action="store_true",
                   help="also bisect the least memory each case runs in (least_gib) under "
                        "torch.cuda.set_per_process_memory_fraction caps")
    p.add_argument("--least-step-gib", type=float, default=0.25,
                   help="the bisection's resolution (default 0.25 GiB)")
    p.add_argument("--record-allocator", action="store_true",
                   help="record the CUDA allocator's trace (slower) and replay it with "
                        "caching_allocator.py: replayed_reserved_gib, to check the replay "
                        "that trace_step.py relies on against peak_gib")
    p.add_argument("--cases", help="a file of cases, one a line, run in order instead of the "
                   "grid: model method seq_len on|off attention [batch_size=N] "
                   "[lora_targets=T] [lora_rank=R]")
    p.add_argument("--budget-s", type=float, default=0,
                   help="start no case after this many seconds (0: no limit)")
    p.add_argument("--device", default="cuda", help="cuda, or cpu for a quick check")
    p.add_argument("--layers", type=int, default=0,
                   help="override the number of layers (a quick check on a CPU)")
    p.add_argument("--vocab", type=int, default=0,
                   help="override the vocabulary (a quick check on a CPU, whose bf16 matrix "
                        "products with a 128k vocabulary take minutes)")
    p.add_argument("--save-trace", metavar="DIR",
                   help="with --record-allocator, also write each case's allocator trace "
                        "(action, addr, size) to DIR as gzipped JSON, to replay offline")
    p.add_argument("--out", default="training_runs.csv")
    p.add_argument("--calibration-out", metavar="FILE",
                   help="also append each finished case to FILE in the columns of "
                        "tests/data/calibration/training_memory.csv")
    return p.parse_args()


def save_trace(folder, row, trace):
    """Writes the allocator trace entries of one case (action, addr, size) to folder."""
    import gzip
    import json
    os.makedirs(folder, exist_ok=True)
    name = "%s_%s_%s_b%s_s%s_ck%s.json.gz" % (row["model"], row["method"], row["attention"],
                                              row["batch_size"], row["seq_len"],
                                              row["grad_checkpointing"])
    with gzip.open(os.path.join(folder, name), "wt") as f:
        json.dump([{"action": e["action"], "addr": e["addr"], "size": e["size"]}
                   for e in trace], f)


def optimizer_name(value):
    """An optim name of OPTIMIZERS, else ValueError (a --cases field)."""
    if value not in OPTIMIZERS:
        raise ValueError(value)
    return value


CASE_KEYS = {"batch_size": int, "lora_targets": str, "lora_rank": int,
             "optimizer": optimizer_name}


def grid_cases(args):
    """The cases the grid options span, as dicts."""
    for name in args.models.split(","):
        for method in args.methods.split(","):
            for seq_len in (int(s) for s in args.seq_lens.split(",")):
                for ckpt in (c == "on" for c in args.checkpointing.split(",")):
                    for attn in args.attention.split(","):
                        yield dict(model=name, method=method, seq_len=seq_len, ckpt=ckpt,
                                   attention=attn)


def file_cases(path):
    """The cases a --cases file lists; exits with a one-line message naming a bad line."""
    cases = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            bad = "measure_training: %s:%d: " % (path, number)
            if len(words) < 5 or words[3] not in ("on", "off") or not words[2].isdigit():
                sys.exit(bad + "expected: model method seq_len on|off attention [key=value]")
            case = dict(model=words[0], method=words[1], seq_len=int(words[2]),
                        ckpt=words[3] == "on", attention=words[4])
            for word in words[5:]:
                key, _, value = word.partition("=")
                if key not in CASE_KEYS or not value:
                    sys.exit(bad + "unknown field %s (known: %s)" % (word, ", ".join(CASE_KEYS)))
                try:
                    case[key] = CASE_KEYS[key](value)
                except ValueError:
                    sys.exit(bad + "bad value in %s" % word)
            if case["model"] not in CONFIGS:
                sys.exit(bad + "unknown model %s" % case["model"])
            cases.append(case)
    return cases


def make_optimizer(torch, transformers, name, params):
    """The optimizer the Trainer builds for optim name (OPTIMIZERS), over params."""
    if name == "adamw_torch_fused":
        return torch.optim.AdamW(params, lr=1e-5, fused=True)
    if name in ("adamw_torch", "adamw"):
        return torch.optim.AdamW(params, lr=1e-5, foreach=True)
    if name in ("adamw_8bit", "paged_adamw_8bit"):
        import bitsandbytes as bnb
        cls = bnb.optim.AdamW8bit if name == "adamw_8bit" else bnb.optim.PagedAdamW8bit
        return cls(params, lr=1e-5)
    if name == "adafactor":
        # As the Trainer's optim "adafactor": no relative step, no parameter scaling.
        return transformers.optimization.Adafactor(params, lr=1e-5, scale_parameter=False,
                                                   relative_step=False, warmup_init=False)
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-5)
    raise ValueError("unknown optimizer %s" % name)


def calibration_row(row, when):
    """row (a finished case of FIELDS) in the columns of training_memory.csv."""
    bits = "4 (NF4 base)" if row["method"] == "qlora" else row["bits"]
    method = {"lora": "LoRA", "qlora": "QLoRA", "full": "full",
              "full_amp": "full (AMP, fp32 master)"}.get(row["method"], row["method"])
    extra = ["optimizer %s" % row["optimizer"], "attention %s" % row["attention"],
             "tokens/sec %s" % row.get("tokens_per_s", ""),
             "tokens/sec per step %s" % row.get("tokens_per_s_steps", "")]
    if row.get("lora_rank"):
        extra.append("LoRA rank %s on %s, dropout %s" % (row["lora_rank"], row["lora_targets"],
                                                        row["lora_dropout"]))
    return dict(
        model=row["model"], method=method, bits=bits, batch_size=row["batch_size"],
        seq_len=row["seq_len"], grad_checkpointing=row["grad_checkpointing"],
        peak_gib=row.get("peak_gib", ""), framework=row["framework"],
        source="tests/tools/measure_training.py, %s" % when, gpu="1x %s" % row["gpu"],
        value_as_reported="max_memory_reserved %s GiB; max_memory_allocated %s GiB; "
                          "outside PyTorch %s GiB" % (row.get("peak_gib", ""),
                                                     row.get("allocated_gib", ""),
                                                     row.get("non_torch_gib", "")),
        extra_settings="; ".join(extra),
        notes="random weights from config; %d layers, hidden %s, vocabulary %s; torch %s, "
              "transformers %s, peft %s; peak_gib is the reserved peak (the CUDA context "
              "is outside it)" % (row["n_layers"], row["hidden"], row["vocab"], row["torch"],
                                  row["transformers"], row["peft"]))


def device_used_bytes(torch):
    free, total = torch.cuda.mem_get_info()
    return total - free


def build_model(torch, transformers, peft, args, case, row):
    """The case's model on the device, with checkpointing, quantisation and LoRA as asked."""
    cfg = dict(CONFIGS[case["model"]])
    if args.layers:
        cfg["num_hidden_layers"] = args.layers
    if args.vocab:
        cfg["vocab_size"] = args.vocab
    model_type = cfg.pop("model_type")
    config = transformers.AutoConfig.for_model(model_type, **cfg)
    config._attn_implementation = case["attention"]
    method, ckpt = case["method"], case["ckpt"]
    dtype = torch.float32 if method == "full_amp" else torch.bfloat16
    with torch.device(args.device):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype)
    if method == "qlora":
        import bitsandbytes  # noqa: F401  (fails early when it is missing)
        # Quantise the random model's linear layers as from_pretrained would.
        from transformers.integrations import replace_with_bnb_linear
        qc = transformers.BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                             bnb_4bit_use_double_quant=True,
                                             bnb_4bit_compute_dtype=torch.bfloat16)
        model = model.cpu()
        model = replace_with_bnb_linear(model, quantization_config=qc)
        model = model.to(args.device)
        model = peft.prepare_model_for_kbit_training(model, use_gradient_checkpointing=ckpt)
    if ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.config.use_cache = False
    if method in ("lora", "qlora"):
        model = wrap_lora(peft, model, args)
        if ckpt:
            model.enable_input_require_grads()
        row["lora_rank"] = args.lora_rank
        row["lora_targets"] = args.lora_targets
        row["lora_dropout"] = args.lora_dropout
    return model, config


def least_fitting(lo, hi, fits, step):
    """The least cap in (lo, hi] at which fits(cap) holds, to within step: fits(hi) is taken
    as true (the case ran there) and fits as monotonic (more memory never makes a run fail).
    Returns hi when hi - lo <= step. Pure, so that it can be checked without a GPU."""
    if not (step > 0) or hi < lo:
        raise ValueError("least_fitting: need lo <= hi and step > 0")
    while hi - lo > step:
        mid = (lo + hi) / 2.0
        if fits(mid):
            hi = mid
        else:
            lo = mid
    return hi


def least_memory(torch, transformers, peft, args, case, row):
    """The least memory, in GiB, PyTorch's allocator ran case in (least_fitting between its
    allocated and reserved peaks in row), or None when the bisection cannot be set up."""
    total = torch.cuda.get_device_properties(0).total_memory
    lo, hi = row["allocated_gib"] * GIB, row["peak_gib"] * GIB
    if not (0 < lo <= hi <= total):
        return None
    quick = argparse.Namespace(**vars(args))
    quick.steps = min(args.steps, 3)  # the second step reserves the loss's block anew
    quick.record_allocator = False

    def fits(cap):
        return run_case(torch, transformers, peft, quick, case, cap_bytes=cap)["status"] == "ok"

    return round(least_fitting(lo, hi, fits, args.least_step_gib * GIB) / GIB, 3)


def run_case(torch, transformers, peft, args, case, cap_bytes=None):
    """Returns the measured row (a dict of FIELDS) of one case: a dict of model, method,
    seq_len, ckpt and attention, with optional batch_size, lora_targets and lora_rank that
    stand in for the options of the same names. With cap_bytes, PyTorch's allocator may hold
    no more than that many bytes of the device (set_per_process_memory_fraction)."""
    args = argparse.Namespace(**vars(args))
    for key in CASE_KEYS:
        if key in case:
            setattr(args, key, case[key])
    cuda = args.device == "cuda"
    method, seq_len = case["method"], case["seq_len"]
    row = dict(model=case["model"], method=method, batch_size=args.batch_size,
               seq_len=seq_len, grad_checkpointing="yes" if case["ckpt"] else "no",
               attention=case["attention"],
               optimizer="adamw_torch" if args.optimizer == "adamw" else args.optimizer,
               framework="transformers+peft",
               gpu=torch.cuda.get_device_name(0) if cuda else "cpu",
               torch=torch.__version__, transformers=transformers.__version__,
               peft=getattr(peft, "__version__", ""), notes="random weights from config")
    amp = method == "full_amp"
    row["precision"] = "amp" if amp else "bf16"
    row["bits"] = "4 (NF4 base)" if method == "qlora" else ("fp32 master" if amp else "bf16")
    model = opt = loss = ids = None
    recording = False
    try:
        gc.collect()
        if cuda:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            if cap_bytes:
                total = torch.cuda.get_device_properties(0).total_memory
                torch.cuda.set_per_process_memory_fraction(min(1.0, cap_bytes / total), 0)
            if args.record_allocator:
                # No stacks: the replay needs only sizes and addresses, and stacks slow the run.
                torch.cuda.memory._record_memory_history(max_entries=20000000, context=None,
                                                         stacks="python")
                recording = True
        model, config = build_model(torch, transformers, peft, args, case, row)
        row.update(n_layers=config.num_hidden_layers, hidden=config.hidden_size,
                   intermediate=config.intermediate_size, n_heads=config.num_attention_heads,
                   n_kv_heads=config.num_key_value_heads,
                   head_dim=getattr(config, "head_dim", None) or
                   config.hidden_size // config.num_attention_heads,
                   vocab=config.vocab_size, tied="yes" if config.tie_word_embeddings else "no",
                   params=sum(p.numel() for p in model.parameters()),
                   trainable_params=sum(p.numel() for p in model.parameters()
                                        if p.requires_grad))
        params = [p for p in model.parameters() if p.requires_grad]
        opt = make_optimizer(torch, transformers, args.optimizer, params)
        del params
        model.train()
        tokens = args.batch_size * seq_len
        ids = torch.randint(0, config.vocab_size, (args.batch_size, seq_len), device=args.device)
        non_torch = 0
        t0 = None
        per_step = []
        for step in range(args.steps):
            if cuda:
                torch.cuda.synchronize()
            began = time.perf_counter()
            if step == 1:
                t0 = began
            with torch.autocast(args.device, dtype=torch.bfloat16, enabled=amp):
                loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            loss = None
            opt.step()
            opt.zero_grad(set_to_none=True)
            if cuda:
                non_torch = max(non_torch, device_used_bytes(torch) - torch.cuda.memory_reserved())
                torch.cuda.synchronize()
            if step >= 1:
                per_step.append(tokens / (time.perf_counter() - began))
        elapsed = time.perf_counter() - t0 if t0 else float("nan")
        row["tokens_per_s_steps"] = "/".join("%.1f" % v for v in per_step)
        if cuda:
            row["peak_gib"] = round(torch.cuda.max_memory_reserved() / GIB, 3)
            row["allocated_gib"] = round(torch.cuda.max_memory_allocated() / GIB, 3)
            row["non_torch_gib"] = round(non_torch / GIB, 3)
        if recording:
            from caching_allocator import replay_device_trace
            trace = torch.cuda.memory._snapshot()["device_traces"][0]
            if args.save_trace:
                save_trace(args.save_trace, row, trace)
            row["replayed_reserved_gib"] = round(replay_device_trace(trace).peak_reserved / GIB,
                                                 3)
        row["tokens_per_s"] = round(tokens * (args.steps - 1) / elapsed, 1)
        row["status"] = "ok"
    except torch.cuda.OutOfMemoryError:
        row["status"] = "OOM"
        row["peak_gib"] = round(torch.cuda.max_memory_reserved() / GIB, 3)
    except ImportError as exc:
        row["status"] = "skipped: %s" % exc
    except Exception as exc:  # noqa: BLE001  (a row says what broke; the next case runs)
        text = str(exc).splitlines()
        row["status"] = "error: %s" % (text[0][:200] if text else type(exc).__name__)
    finally:
        if recording:
            torch.cuda.memory._record_memory_history(enabled=None)
        del model, opt, loss, ids
        gc.collect()
        if cuda:
            torch.cuda.empty_cache()
            if cap_bytes:
                torch.cuda.set_per_process_memory_fraction(1.0, 0)
    return row


def main():
    args = parse_args()
    try:
        import torch
        import transformers
        import peft
    except ImportError as exc:
        sys.exit("measure_training: needs PyTorch, transformers and peft on a host with a CUDA "
                 "GPU (pip install torch transformers peft; bitsandbytes for qlora and the "
                 "8-bit optimizers): %s" % exc)
    if args.device not in ("cuda", "cpu"):
        sys.exit("measure_training: --device is cuda or cpu, not %s" % args.device)
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("measure_training: no CUDA device")
    if args.cases:
        cases = file_cases(args.cases)
    else:
        check_models("measure_training", args.models)
        cases = list(grid_cases(args))
    began = time.monotonic()
    when = datetime.date.today().isoformat()
    with contextlib.ExitStack() as stack:
        f, w = stack.enter_context(open_rows(args.out, FIELDS))
        cal = (stack.enter_context(open_rows(args.calibration_out, CALIBRATION_FIELDS))
               if args.calibration_out else None)
        for number, case in enumerate(cases):
            if args.budget_s and time.monotonic() - began > args.budget_s:
                print("measure_training: budget spent; %d of %d cases left"
                      % (len(cases) - number, len(cases)), flush=True)
                break
            row = run_case(torch, transformers, peft, args, case)
            if args.least_memory and row["status"] == "ok" and args.device == "cuda":
                row["least_gib"] = least_memory(torch, transformers, peft, args, case, row)
            w.writerow(row)
            f.flush()
            if cal and row["status"] == "ok" and args.device == "cuda":
                cal[1].writerow(calibration_row(row, when))
                cal[0].flush()
            print("%.0fs" % (time.monotonic() - began), row["model"], row["method"],
                  row["batch_size"], row["seq_len"], row["grad_checkpointing"],
                  row["attention"], row["status"], row.get("peak_gib"), row.get("least_gib"),
                  row.get("tokens_per_s"), flush=True)


if __name__ == "__main__":
    main()
