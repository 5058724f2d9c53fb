#!/usr/bin/env python3
"""Trace every tensor a whole fine-tuning step allocates and frees, at full size, on the CPU.

The Hugging Face stack runs under torch's FakeTensorMode: every operator computes only its
output's shape and dtype, so a whole model (every layer, the real vocabulary) at the real
sequence length runs a step in seconds with no memory behind it. A dispatch mode records each
storage an operator creates and a finalizer records when it dies: the storages autograd saves
live until backward releases them, exactly as on a GPU. The trace covers building the model,
two steps of forward, loss, backward, torch's AdamW step and zero_grad(set_to_none=True), as
the Trainer runs them with one micro-batch a step; the second step is the steady state, with
the optimizer's moments already there.

For each case the tool writes:
- the peak of the bytes alive (what torch.cuda.max_memory_allocated() reports less the
  rounding to 512 bytes), and the phase and operator at that peak;
- what PyTorch's CUDA caching allocator would reserve for the same trace
  (caching_allocator.py replays it): torch.cuda.max_memory_reserved() with memory to spare;
- the least GPU memory the allocator runs the trace in: the replay with ever less memory,
  giving its wholly free cached segments back before it fails, as the allocator does. This
  is what the run needs of the card besides the CUDA context.

What the trace cannot see: memory that CUDA kernels allocate inside an operator (cuBLAS and
cuDNN workspaces, flash-attention's fp32 accumulators in its backward) and the CUDA context.
The CPU's SDPA keeps the same tensors as CUDA's flash kernel (q, k, v, output, log-sum-exp).
transformers thinks a fake tensor is being traced and would build a causal mask that SDPA
otherwise skips; the tool tells it that nothing is traced.

It needs torch, transformers and peft, and no GPU. Example:

    python3 tests/tools/trace_step.py --models llama-3.1-8b --methods lora,full \
        --seq-lens 2048,8192 --checkpointing on,off --out build/traced_steps.csv

The committed rows came from runs like that one, plus --attention eager, --methods full_amp,
--batch-size 4, and --rows padded --batch-size 2 (or 4).

The committed rows are in tests/fixtures/training/traced_steps.csv; the train_memory suite
checks rigfit's peak against them.
"""

import argparse
import os
import sys
import weakref

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from caching_allocator import CachingAllocator  # noqa: E402
from measure_activations import use_fused_dropout  # noqa: E402
from measure_training import CONFIGS, check_models, open_rows, wrap_lora  # noqa: E402  (shared)

FIELDS = ["model", "n_layers", "hidden", "intermediate", "n_heads", "n_kv_heads", "head_dim",
          "vocab", "tied", "method", "precision", "optimizer", "attention", "rows", "batch_size",
          "seq_len",
          "grad_checkpointing", "lora_rank", "lora_targets", "lora_dropout", "params",
          "trainable_params", "allocated_peak_bytes", "reserved_peak_bytes",
          "least_reserved_bytes", "peak_phase",
          "peak_op", "torch", "transformers", "peft", "notes"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="llama-3.1-8b")
    p.add_argument("--methods", default="lora,full",
                   help="lora, full (bf16), full_amp (fp32 weights, bf16 autocast)")
    p.add_argument("--attention", default="sdpa", help="sdpa, eager")
    p.add_argument("--seq-lens", default="2048")
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--checkpointing", default="on,off")
    p.add_argument("--rows", default="plain", choices=["plain", "padded"],
                   help="plain, or padded: the batch's last row ends in padding (its final "
                        "quarter), which gives SDPA a 4D mask")
    p.add_argument("--lora-rank", type=int, default=16)
    p.add_argument("--lora-dropout", type=float, default=0.05)
    p.add_argument("--lora-targets", default="all-linear")
    p.add_argument("--detail", type=int, default=0,
                   help="print the N largest groups of tensors alive at the peak")
    p.add_argument("--out", default="traced_steps.csv")
    return p.parse_args()


class Trace:
    """The storages created under it, in order, and when each dies: events (id, bytes, what)
    for an allocation, (id, None, None) for a free; and the bytes alive, with their peak."""

    def __init__(self, torch):
        from torch.utils._python_dispatch import TorchDispatchMode
        trace = self
        self.events = []
        self.live = {}
        self.next_id = 0
        self.alive = self.peak = 0
        self.peak_event = 0
        self.phase = "build"

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                for t in torch.utils._pytree.tree_leaves(out):
                    if isinstance(t, torch.Tensor):
                        trace.record(t, func)
                return out
        self.mode = Mode

    def record(self, t, func):
        storage = t.untyped_storage()
        key = storage._cdata
        if key in self.live:
            return
        n = storage.nbytes()
        self.live[key] = (self.next_id, n)
        what = (self.phase, str(func), tuple(t.shape), str(t.dtype).replace("torch.", ""))
        self.events.append((self.next_id, n, what))
        self.next_id += 1
        self.alive += n
        if self.alive > self.peak:
            self.peak, self.peak_event = self.alive, len(self.events) - 1
        weakref.finalize(storage, self.release, key)

    def release(self, key):
        sid, n = self.live.pop(key)
        self.alive -= n
        self.events.append((sid, None, None))

    def at_peak(self, top):
        """The largest groups of storages alive at the peak, by what made them."""
        alive = {}
        for sid, n, what in self.events[:self.peak_event + 1]:
            if n is None:
                alive.pop(sid, None)
            else:
                alive[sid] = (n, what)
        groups = {}
        for n, what in alive.values():
            g = groups.setdefault(what, [0, 0])
            g[0] += n
            g[1] += 1
        return sorted(groups.items(), key=lambda kv: -kv[1][0])[:top]


def replay(events, capacity=None):
    """Runs the trace through the caching allocator with capacity bytes of GPU memory (None:
    unbounded); returns the allocator, or None when the trace runs out of memory."""
    alloc = CachingAllocator(capacity)
    blocks = {}
    for sid, n, _ in events:
        if n is None:
            alloc.free(blocks.pop(sid))
        else:
            b = alloc.malloc(n)
            if b is None:
                return None
            blocks[sid] = b
    return alloc


def least_capacity(events, low, high, step=64 << 20):
    """The least GPU memory (to step bytes) the caching allocator runs the trace in, between
    low (which fails or is the allocated peak) and high (which runs)."""
    while high - low > step:
        mid = (low + high) // 2
        if replay(events, mid) is None:
            low = mid
        else:
            high = mid
    return high


def untraced(transformers):
    """A fake tensor has no values, and transformers takes it for a traced one: it could not
    tell from the positions that the rows are not packed, nor from the attention mask that
    they are padded, and would build the causal mask SDPA otherwise skips (is_causal). The
    rows here are known: plain (one sequence each, positions 0..n-1) or padded (given with an
    attention mask that has padding), so the packing test answers no, and the skip test
    answers no for padded rows and runs as it runs untraced for plain ones."""
    import transformers.masking_utils as mu
    ignore = mu._ignore_causal_mask_sdpa

    def ignore_untraced(padding_mask, *args, **kwargs):
        if padding_mask is not None:
            return False
        traced, mu.is_tracing = mu.is_tracing, lambda *_a, **_k: False
        try:
            return ignore(padding_mask, *args, **kwargs)
        finally:
            mu.is_tracing = traced
    mu._ignore_causal_mask_sdpa = ignore_untraced
    mu.find_packed_sequence_indices = lambda *_a, **_k: None


def materialise(torch, model):
    """Gives every parameter and buffer of a meta model a (fake) CPU tensor of its shape and
    dtype, keeping tied weights tied."""
    made = {}
    for mod in model.modules():
        for table, is_param in ((mod._parameters, True), (mod._buffers, False)):
            for n, t in list(table.items()):
                if t is None:
                    continue
                if id(t) not in made:
                    new = torch.zeros(t.shape, dtype=t.dtype)
                    made[id(t)] = torch.nn.Parameter(new, requires_grad=t.requires_grad) \
                        if is_param else new
                table[n] = made[id(t)]


def run_case(torch, transformers, peft, args, name, method, attn, seq, ckpt):
    from torch._subclasses.fake_tensor import FakeTensorMode
    cfg = dict(CONFIGS[name])
    model_type = cfg.pop("model_type")
    config = transformers.AutoConfig.for_model(model_type, **cfg)
    config._attn_implementation = attn
    config.use_cache = False
    amp = method == "full_amp"
    dtype = torch.float32 if amp else torch.bfloat16
    # Built on the meta device (PEFT moves its adapters to the base layer's device with
    # Module.to, which cannot swap fake parameters), then given fake CPU storage under the
    # trace.
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype)
    if ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if method == "lora":
        model = wrap_lora(peft, model, args)
        if ckpt:
            model.enable_input_require_grads()
    trace = Trace(torch)
    with FakeTensorMode(), trace.mode():
        materialise(torch, model)
        model.train()
        params = [p for p in model.parameters() if p.requires_grad]
        # foreach, as torch picks it for CUDA tensors (the CPU default is a per-tensor loop)
        opt = torch.optim.AdamW(params, lr=1e-5, foreach=True)
        ids = torch.randint(0, config.vocab_size, (args.batch_size, seq))
        inputs = dict(input_ids=ids, labels=ids)
        if args.rows == "padded":  # the last row's final quarter is padding
            mask = torch.ones(args.batch_size, seq, dtype=torch.long)
            mask[-1, seq - seq // 4:] = 0
            inputs = dict(input_ids=ids, attention_mask=mask,
                          labels=ids.masked_fill(mask == 0, -100))
        for step in range(2):
            trace.phase = "forward%d" % step
            # AMP: fp32 weights, the forward under bf16 autocast (the Trainer's bf16=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
                loss = model(**inputs).loss
            trace.phase = "backward%d" % step
            loss.backward()
            del loss
            trace.phase = "step%d" % step
            opt.step()
            opt.zero_grad(set_to_none=True)
        n_params = sum(p.numel() for p in model.parameters())
        n_trained = sum(p.numel() for p in params)
        del model, opt, params
    if args.detail:
        for (phase, op, shape, dtype), (n, count) in trace.at_peak(args.detail):
            print("  %9.1f MiB  %4d x %-10s %-42s %s %s" % (n / 2**20, count, phase, op, shape,
                                                         dtype))
    unbounded = replay(trace.events)
    least = least_capacity(trace.events, trace.peak, unbounded.peak_reserved)
    phase, op = trace.events[trace.peak_event][2][:2]
    lora = method == "lora"
    return dict(model=name, n_layers=config.num_hidden_layers, hidden=config.hidden_size,
                intermediate=config.intermediate_size, n_heads=config.num_attention_heads,
                n_kv_heads=config.num_key_value_heads,
                head_dim=getattr(config, "head_dim", None) or
                config.hidden_size // config.num_attention_heads,
                vocab=config.vocab_size, tied="yes" if config.tie_word_embeddings else "no",
                method="full" if amp else method, precision="amp" if amp else "bf16",
                optimizer="adamw", attention=attn, rows=args.rows,
                batch_size=args.batch_size, seq_len=seq,
                grad_checkpointing="yes" if ckpt else "no",
                lora_rank=args.lora_rank if lora else "",
                lora_targets=args.lora_targets if lora else "",
                lora_dropout=args.lora_dropout if lora else "", params=n_params,
                trainable_params=n_trained, allocated_peak_bytes=trace.peak,
                reserved_peak_bytes=unbounded.peak_reserved, least_reserved_bytes=least,
                peak_phase=phase, peak_op=op, torch=torch.__version__,
                transformers=transformers.__version__, peft=getattr(peft, "__version__", ""),
                notes="FakeTensorMode trace, whole model, two steps")


def main():
    args = parse_args()
    try:
        import torch
        import transformers
        import peft
    except ImportError as exc:
        sys.exit("trace_step: needs torch, transformers and peft (%s)" % exc)
    check_models("trace_step", args.models)
    untraced(transformers)
    use_fused_dropout(torch)
    with open_rows(args.out, FIELDS) as (f, w):
        for name in args.models.split(","):
            for method in args.methods.split(","):
                for attn in args.attention.split(","):
                    for seq in (int(s) for s in args.seq_lens.split(",")):
                        for ck in args.checkpointing.split(","):
                            row = run_case(torch, transformers, peft, args, name, method, attn,
                                           seq, ck == "on")
                            w.writerow(row)
                            f.flush()
                            print(row, flush=True)


if __name__ == "__main__":
    main()
