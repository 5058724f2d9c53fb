#!/usr/bin/env python3
"""Measure what the Hugging Face fine-tuning stack keeps for backward, on the CPU.

With gradient checkpointing off, a fine-tuning peak is mostly the tensors autograd saves in
the forward for the backward. Which tensors those are is decided by the modelling code
(transformers), the adapters (peft) and torch's autograd, not by the device: the same bytes
are saved on a GPU. This tool runs the real stack on the CPU, with models of real
architectures built from their config.json fields with random weights (nothing is
downloaded), and counts every saved tensor once (by storage) with torch's saved-tensor hooks:

- per token and decoder layer (the second layer of a two-layer model, so that the first
  layer's input, the embedding output, is not counted as the layer's), at two sequence
  lengths, so that eager attention's per-head seq x seq terms show as the slope;
- for the head and loss chain (final norm, output projection, cross-entropy), per token;
- with --kept, what a forward leaves allocated per layer (a two-layer model less a
  one-layer one, by the CPU allocator), with gradient checkpointing off and on;
- and the allocation peak of a whole step (forward, backward) above the model's states, as
  torch's profiler records the CPU allocator (CPU kernels' own workspaces differ from CUDA's:
  read it as a cross-check of the phases, not as a GPU peak).

It needs torch, transformers and peft, and no GPU. Without a Python package index, Debian
sid packages python3-torch, python3-transformers and python3-accelerate (a chroot will do),
and PEFT is pure Python (put its src/ on PYTHONPATH). --methods qlora needs bitsandbytes,
whose CPU path is Python too (its repository's root on PYTHONPATH). Example:

    python3 tests/tools/measure_activations.py --models llama-3.1-8b \
        --methods lora,full --attention sdpa,eager --seq-lens 128,256 --no-step --kept \
        --out build/activation_runs.csv

The committed rows came from runs like that one, plus --autocast no,yes, --lora-dropout 0,
--methods full_amp,qlora, --lora-targets q_proj+v_proj, --rows padded and --rows packed (the
4D mask SDPA gets), --cast bf16 (the model as DeepSpeed runs it) and, for the loss's peak, a
narrowed model:
--override hidden_size=512,intermediate_size=1792,num_attention_heads=4,num_key_value_heads=1
with --seq-lens 256,512 and the step measured.

The rows are committed in tests/fixtures/training/saved_activations.csv with the versions that
produced them; the train_memory suite checks rigfit's per-layer count against them.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure_training import CONFIGS, check_models, open_rows, wrap_lora  # noqa: E402  (shared)

FIELDS = ["model", "hidden", "intermediate", "n_heads", "n_kv_heads", "head_dim", "vocab",
          "method", "precision", "autocast", "attention", "lora_rank", "lora_targets",
          "lora_dropout", "seq_a", "seq_b", "layer_bytes_per_token_a",
          "layer_bytes_per_token_b", "layer_fp32_bytes_per_token_a", "head_bytes_per_token_a",
          "kept_off_bytes_per_token_a", "kept_on_bytes_per_token_a",
          "step_peak_bytes_per_token_a", "rows", "cast", "torch", "transformers", "peft",
          "notes"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="llama-3.1-8b")
    p.add_argument("--methods", default="lora,full",
                   help="lora, qlora (needs bitsandbytes), full (bf16), full_amp")
    p.add_argument("--attention", default="sdpa,eager")
    p.add_argument("--seq-lens", default="256,512", help="two lengths: the slope is per seq")
    p.add_argument("--lora-rank", type=int, default=16)
    p.add_argument("--lora-dropout", type=float, default=0.05)
    p.add_argument("--lora-targets", default="all-linear")
    p.add_argument("--autocast", default="no",
                   help="no, yes or no,yes: run the forward under bf16 autocast, as the Trainer "
                        "(accelerate's mixed precision) does; full_amp always does")
    p.add_argument("--rows", default="plain", choices=["plain", "padded", "packed"],
                   help="plain (one row of seq tokens), padded (two rows, the second one's "
                        "last quarter padding, as a collator pads to the longest row) or "
                        "packed (one row of two documents, told apart by position_ids)")
    p.add_argument("--cast", default="none", choices=["none", "bf16"],
                   help="none or bf16: cast the whole PEFT model, adapters included, to bf16 "
                        "after wrapping it, as DeepSpeed's engine does with bf16 enabled")
    p.add_argument("--override", default="",
                   help="config fields to change, as key=value,key=value (e.g. a narrow "
                        "model, whose step is quick on a CPU, with the full vocabulary)")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--detail", action="store_true", help="print each saved tensor of a layer")
    p.add_argument("--no-step", action="store_true", help="skip the backward's peak")
    p.add_argument("--kept", action="store_true",
                   help="also measure what a layer keeps from the forward to the backward by "
                        "the allocator, checkpointing off and on (builds two more models)")
    p.add_argument("--out", default="activation_runs.csv")
    return p.parse_args()


def use_fused_dropout(torch):
    """Runs dropout as torch runs it on CUDA: at::native_dropout, which keeps a one-byte mask
    for backward. On the CPU, torch's composite dropout multiplies by a noise tensor in the
    input's dtype and keeps that (4 bytes an element for PEFT's fp32 adapter inputs)."""
    functional = torch.nn.functional
    composite = functional.dropout

    def dropout(x, p=0.5, training=True, inplace=False):
        if training and 0.0 < p < 1.0 and x.numel() > 0 and not inplace:
            return torch.native_dropout(x, p, True)[0]
        return composite(x, p, training, inplace)
    functional.dropout = dropout


class SavedCounter:
    """Counts the storages autograd saves, once each, under the phase running."""

    def __init__(self, torch, model):
        self.torch = torch
        self.phase = "outside"
        self.seen = {}
        self.params = {p.untyped_storage().data_ptr() for p in model.parameters()}
        self.params |= {b.untyped_storage().data_ptr() for b in model.buffers()}

    def pack(self, t):
        st = t.untyped_storage()
        key = st.data_ptr()
        if key not in self.params and key not in self.seen:
            self.seen[key] = (self.phase, st.nbytes(), t.dtype, tuple(t.shape))
        return t

    @staticmethod
    def unpack(t):
        return t

    def bytes_in(self, phase, dtype=None):
        return sum(n for ph, n, dt, _ in self.seen.values()
                   if ph == phase and (dtype is None or dt == dtype))


def quantize_nf4(torch, model):
    """Swaps every linear layer of the decoder layers for bitsandbytes' NF4 Linear4bit (double
    quantisation, bf16 compute), as from_pretrained with load_in_4bit does, and marks the model
    so that PEFT prepares it as a 4-bit one."""
    import bitsandbytes as bnb
    for layer in decoder_layers(model):
        for parent in list(layer.modules()):
            for child_name, child in list(parent.named_children()):
                if type(child) is not torch.nn.Linear:
                    continue
                q = bnb.nn.Linear4bit(child.in_features, child.out_features,
                                      bias=child.bias is not None,
                                      compute_dtype=torch.bfloat16, quant_type="nf4")
                q.weight = bnb.nn.Params4bit(child.weight.data, requires_grad=False,
                                             quant_type="nf4",
                                             compress_statistics=True)._quantize("cpu")
                if child.bias is not None:
                    q.bias = torch.nn.Parameter(child.bias.data, requires_grad=False)
                setattr(parent, child_name, q)
    model.is_loaded_in_4bit = True


def build(torch, transformers, peft, args, name, method, attn, layers=2):
    cfg = dict(CONFIGS[name])
    model_type = cfg.pop("model_type")
    cfg["num_hidden_layers"] = layers
    for kv in filter(None, args.override.split(",")):
        key, val = kv.split("=", 1)
        cfg[key] = type(cfg[key])(val) if key in cfg else int(val)
    config = transformers.AutoConfig.for_model(model_type, **cfg)
    config._attn_implementation = attn
    config.use_cache = False
    dtype = torch.float32 if method == "full_amp" else torch.bfloat16
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype)
    if method == "qlora":
        quantize_nf4(torch, model)
        model = peft.prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
    if method in ("lora", "qlora"):
        model = wrap_lora(peft, model, args)
    if args.cast == "bf16":
        model.bfloat16()
    model.train()
    return model, config


def decoder_layers(model):
    for mod in model.modules():
        if type(mod).__name__.endswith("DecoderLayer"):
            yield mod


def final_norm(model):
    base = model
    while not hasattr(base, "norm") and hasattr(base, "model"):
        base = base.model
    return base.norm


def batch(torch, config, seq, rows):
    """The model's inputs for a batch of rows, and the positions they hold (batch x seq, as
    rigfit counts tokens): padding and packing are what make transformers build a 4D mask."""
    if rows == "padded":
        ids = torch.randint(0, config.vocab_size, (2, seq))
        mask = torch.ones(2, seq, dtype=torch.long)
        mask[1, seq - seq // 4:] = 0
        labels = ids.masked_fill(mask == 0, -100)
        return dict(input_ids=ids, attention_mask=mask, labels=labels), 2 * seq
    ids = torch.randint(0, config.vocab_size, (1, seq))
    if rows == "packed":
        half = seq // 2
        pos = torch.cat([torch.arange(half), torch.arange(seq - half)]).unsqueeze(0)
        return dict(input_ids=ids, position_ids=pos, labels=ids), seq
    return dict(input_ids=ids, labels=ids), seq


def measure_forward(torch, model, config, seq, detail, autocast, rows):
    """Saved bytes per token of the second layer (total and fp32) and of the head."""
    counter = SavedCounter(torch, model)
    hooks = []
    for i, layer in enumerate(decoder_layers(model)):
        def pre(_m, _a, i=i):
            counter.phase = "layer%d" % i

        def post(_m, _a, _o):
            counter.phase = "outside"
        hooks.append(layer.register_forward_pre_hook(pre))
        hooks.append(layer.register_forward_hook(post))

    def head(_m, _a):
        counter.phase = "head"
    hooks.append(final_norm(model).register_forward_pre_hook(head))
    inputs, tokens = batch(torch, config, seq, rows)
    with torch.autograd.graph.saved_tensors_hooks(counter.pack, counter.unpack):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = model(**inputs).loss
    for h in hooks:
        h.remove()
    if detail:
        for ph, n, dt, shape in counter.seen.values():
            if ph in ("layer1", "head"):
                print("  %-7s %10d B  %-15s %s" % (ph, n, str(dt), shape))
    out = (counter.bytes_in("layer1") / tokens,
           counter.bytes_in("layer1", torch.float32) / tokens, counter.bytes_in("head") / tokens)
    del loss
    return out


def allocations(prof):
    """Every allocation (positive) and free (negative) the CPU allocator reported to the
    profiler, in order, each as (time, bytes, the names of the ops around it)."""
    from torch._C._profiler import _EventType
    allocs = []

    def walk(node, stack):
        if node.tag == _EventType.Allocation:
            allocs.append((node.start_time_ns, node.extra_fields.alloc_size, stack))
        for child in node.children:
            walk(child, stack + [node.name])
    for root in prof.profiler.kineto_results.experimental_event_tree():
        walk(root, [])
    allocs.sort(key=lambda a: a[0])
    return allocs


def forward_net_bytes(torch, model, config, seq, autocast, rows):
    """What a forward leaves allocated for backward (every allocation less every free), per
    token."""
    from torch.profiler import ProfilerActivity, profile
    inputs, tokens = batch(torch, config, seq, rows)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = model(**inputs).loss
    net = sum(a[1] for a in allocations(prof))
    del loss
    return net / tokens


def measure_kept(torch, transformers, peft, args, name, method, attn, seq, autocast):
    """Bytes a token keeps from the forward to the backward in one decoder layer, with
    gradient checkpointing off and on: a two-layer model's forward less a one-layer model's,
    by the CPU allocator."""
    out = []
    for ckpt in (False, True):
        net = []
        for layers in (1, 2):
            torch.manual_seed(0)
            model, config = build(torch, transformers, peft, args, name, method, attn, layers)
            if ckpt:
                model.gradient_checkpointing_enable(
                    gradient_checkpointing_kwargs={"use_reentrant": False})
                if method == "lora":
                    model.enable_input_require_grads()
            net.append(forward_net_bytes(torch, model, config, seq, autocast, args.rows))
            del model
        out.append(net[1] - net[0])
    return out


def measure_step_peak(torch, model, config, seq, autocast, rows):
    """The CPU allocator's peak over one forward and backward, above what was allocated
    before (the model's states), per token."""
    from torch.profiler import ProfilerActivity, profile
    inputs, tokens = batch(torch, config, seq, rows)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = model(**inputs).loss
        loss.backward()
        del loss
    allocs = allocations(prof)
    cur = peak = 0
    where = []
    for _, size, stack in allocs:
        cur += size
        if cur > peak:
            peak, where = cur, stack
    print("  step peak %.0f B/token in: %s" % (peak / tokens, " > ".join(where[-4:])),
          flush=True)
    model.zero_grad(set_to_none=True)
    return peak / tokens


def main():
    args = parse_args()
    try:
        import torch
        import transformers
        import peft
    except ImportError as exc:
        sys.exit("measure_activations: needs torch, transformers and peft (%s)" % exc)
    if args.threads:
        torch.set_num_threads(args.threads)
    use_fused_dropout(torch)
    seqs = [int(s) for s in args.seq_lens.split(",")]
    if len(seqs) != 2 or seqs[0] >= seqs[1]:
        sys.exit("measure_activations: --seq-lens takes two increasing lengths")
    check_models("measure_activations", args.models)
    with open_rows(args.out, FIELDS) as (f, w):
        for name in args.models.split(","):
            for method in args.methods.split(","):
                for ac in args.autocast.split(","):
                    autocast = ac == "yes" or method == "full_amp"
                    for attn in args.attention.split(","):
                        torch.manual_seed(0)
                        model, config = build(torch, transformers, peft, args, name, method, attn)
                        a = measure_forward(torch, model, config, seqs[0], args.detail,
                                            autocast, args.rows)
                        b = measure_forward(torch, model, config, seqs[1], False, autocast,
                                            args.rows)
                        peak = 0 if args.no_step else measure_step_peak(
                            torch, model, config, seqs[0], autocast, args.rows)
                        kept = ("", "")
                        if args.kept:
                            model = None
                            kept = measure_kept(torch, transformers, peft, args, name, method,
                                                attn, seqs[0], autocast)
                        lora = method in ("lora", "qlora")
                        row = dict(model=name, hidden=config.hidden_size,
                                   intermediate=config.intermediate_size,
                                   n_heads=config.num_attention_heads,
                                   n_kv_heads=config.num_key_value_heads,
                                   head_dim=getattr(config, "head_dim", None) or
                                   config.hidden_size // config.num_attention_heads,
                                   vocab=config.vocab_size,
                                   method=method if lora else "full",
                                   precision="amp" if method == "full_amp" else "bf16",
                                   autocast="yes" if autocast else "no",
                                   attention=attn, lora_rank=args.lora_rank if lora else "",
                                   lora_targets=args.lora_targets if lora else "",
                                   lora_dropout=args.lora_dropout if lora else "",
                                   seq_a=seqs[0], seq_b=seqs[1],
                                   layer_bytes_per_token_a=round(a[0], 1),
                                   layer_bytes_per_token_b=round(b[0], 1),
                                   layer_fp32_bytes_per_token_a=round(a[1], 1),
                                   head_bytes_per_token_a=round(a[2], 1),
                                   kept_off_bytes_per_token_a=kept[0] and round(kept[0], 1),
                                   kept_on_bytes_per_token_a=kept[1] and round(kept[1], 1),
                                   step_peak_bytes_per_token_a=round(peak, 1),
                                   rows=args.rows, cast=args.cast,
                                   torch=torch.__version__, transformers=transformers.__version__,
                                   peft=getattr(peft, "__version__", ""),
                                   notes="CPU, random weights from config, two layers" +
                               (" (" + args.override + ")" if args.override else ""))
                        w.writerow(row)
                        f.flush()
                        print(row, flush=True)
                        del model


if __name__ == "__main__":
    main()
