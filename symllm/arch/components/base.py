"""What every component is built of: :class:`Component` (closed forms for what a part owns, and its
children), its :class:`Rules` (split, LoRA names, weight kind, stacks), :func:`matmul` (the one place a
multiply-add is 2 FLOPs), :func:`linear`, and the per-element counts :data:`ELEMENTWISE`."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import sympy as sp

from symllm.arch import keeps
from symllm.arch.algebra import expanded, factored, substitute
from symllm.arch.dtypes import FP32, INT64
from symllm.arch.layers import LAYOUT_ENGINES, Structure, Variant, WINDOWS
from symllm.arch.symbols import b, beta_a, d, d_ff, d_h, LATEX, n_h, n_kv, s
from symllm.errors import SymllmError
from symllm.validate import boolean, choice, with_list


#: what a component can own and :meth:`Component.total` adds up; each an expression in symllm.arch.symbols
QUANTITIES = ("params", "active", "flops", "elementwise", "kv_cache", "saved", "state_cache")

#: what a training forward saves for backward: nothing under a part that runs forward only (:attr:`Rules.no_grad`)
SAVED = ("saved", "eager_saved")

#: element-wise FLOPs per element (the ``elementwise`` bucket), stated once
ELEMENTWISE = {
    "rmsnorm": 4,   # square, accumulate, scale by 1/rms, multiply by the weight (per-row rsqrt dropped)
    "silu": 4,      # x / (1 + exp(-x)): negate, exp, add, divide
    "gate": 1,      # silu(w1 x) * (w3 x)
    "rope": 3,      # per rotated element: 2 multiplies and 1 add of the 2x2 rotation
    "softmax": 5,   # per score: scale by 1/sqrt(d_h), subtract max, exp, accumulate, divide
    "residual": 1,  # per element of each residual add
    "bias": 1,      # per output element of a linear with a bias
    "l2norm": 3,    # Llama 4's weightless QK-norm: square, accumulate, scale by 1/rms
    "scale": 1,     # one multiply per element: Llama 4's query temperature, Gemma's embedding scale
    "combine": 2,   # per element of each routed expert's output: scale by its routing weight, add into the sum
    "shared": 1,    # per element of a shared expert's output: its add into the routed experts' sum
    "sigmoid": 4,   # 1 / (1 + exp(-x)): negate, exp, add, divide (Qwen2-MoE's shared-expert gate)
    # gpt-oss's clamped SwiGLU per element of d_ff: clamp the gate from above (1), the up projection on both
    # sides (2), scale the gate by alpha = 1.702 (1), its sigmoid (4), gate * sigmoid (1), up + 1 (1), the product (1)
    "clamped_glu": 11,
    # GeGLU's gelu_pytorch_tanh, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))): x³ (2 multiplies), times
    # 0.044715, add x, times √(2/π), tanh, add 1, times x, times 0.5
    "gelu_tanh": 9,
    "softcap": 3,   # Gemma 2's soft-capping c·tanh(x / c) per score or logit: divide, tanh, multiply
    "offset": 1,    # Gemma's RMSNorm scales by (1 + weight): one add per weight element, once per call
    # Cohere's LayerNorm: accumulate the mean, subtract it, square, accumulate, scale by 1/std, multiply by the
    # weight (per-row rsqrt dropped, as RMSNorm's)
    "layernorm": 6,
    "relu2": 2,     # Nemotron-H's squared ReLU per element: relu, square
    # the exact GELU, 0.5·x·(1 + erf(x / √2)) (MPT's nn.GELU(approximate="none")): divide by √2, erf, add 1, times x,
    # times 0.5
    "gelu": 5,
    "alibi": 1,     # ALiBi: its bias added to each score (the per-head table is built once a forward, as RoPE's)
    "clip": 2,      # a clamp to [-c, c] per element, one compare a bound (MPT's clip_qkv on q, k and v)
}

#: bytes of one saved normalisation statistic: RMSNorm's 1/rms per row is computed in
#: ``promote_types(activation dtype, fp32)`` (Meta's ``x.float()``; fp64 stays fp64), so max(4, β_a)
STAT_BYTES = sp.Max(FP32, beta_a, evaluate=False)  # the same Max (no comparison made, so import time builds no sum)
#: bytes of one token id saved by the embedding's backward (int64)
INDEX_BYTES = INT64

#: ``T = b·s``: the token rows of one forward pass (docs/conventions.md's ``T``)
T = b * s

#: how tensor parallelism splits a component (:mod:`symllm.costs.parallel`; torch DTensor's plan styles):
#: "column" (a linear's output features: ``ColwiseParallel``), "row" (its input features, a bias replicated:
#: ``RowwiseParallel``), "vocab" (the embedding's rows), "sequence" (a replicated weight whose saved
#: activations sequence parallelism splits along the sequence: ``SequenceParallel``), "replicated", "expert"
#: (not tensor-split: divided over the expert-parallel ranks), "heads" (a vector of one number per query
#: head, split with the heads: ``Shard(0)``, transformers' ``local_rowwise``; gpt-oss's sinks; a weight of a
#: layer's own heads or groups, split with them and needing no collective: a Mamba-2 mixer's convolution, A_log, D,
#: dt_bias and gated norm, a Gated DeltaNet's convolution, A_log and dt_bias), "merged" (a column-wise linear whose
#: output is several tensors side by side, each split over the ranks by its own heads or groups: vLLM's
#: ``MergedColumnParallelLinear``, Mamba-2's in_proj), "held" (held whole, read in part: a column-wise linear every
#: rank holds whole but multiplies only its share of the output features: memory counts the whole weight, FLOPs, the
#: bytes a step reads and the collectives the share, as "column"; TurboMind's lm_head), "whole" (the part and every
#: part under it held and run whole on every rank: its weights, FLOPs, caches and activations unsplit, no collective;
#: a sublayer transformers' plan for a family leaves out, symllm.arch.families.hf.Family.tp_plan), "expert_whole"
#: (routed experts divided over the expert-parallel ranks as "expert", but each held whole on every tensor rank
#: whatever ``--expert-tp`` says: a layout that keeps them so, transformers' plan for gpt-oss, whose
#: ``GptOssExperts`` no rule names; "expert" leaves it to ``--expert-tp``), "gathered" (a column-wise linear whose
#: output every rank gets whole: split as "column", its output all-gathered in forward and, in training, its input's
#: gradient all-reduced in backward, each collective of its own width: transformers' ``colwise_gather_output``,
#: Qwen3-Next's and Qwen3.5's Gated DeltaNet projections; symllm.costs.collectives.gathered), "grad_reduced" (a
#: weight every rank holds whole, as "replicated", whose gradient the ranks all-reduce in backward: transformers'
#: ``replicated_with_grad_allreduce``, the per-head q/k norms of Qwen3's plan; symllm.costs.collectives)
SPLITS = ("column", "row", "vocab", "sequence", "replicated", "expert", "heads", "merged", "held", "whole",
          "expert_whole", "gathered", "grad_reduced")
#: the routed experts' splits: divided over the expert-parallel ranks (symllm.costs.parallel)
EXPERT_SPLITS = ("expert", "expert_whole")
#: the splits whose ranks each compute their share of a linear's output features (a head of them gathers its logits)
COLUMNS = ("column", "held")
#: what a component's weight is, for the weight formats that store some kinds apart (symllm.costs.finetune:
#: QLoRA's NF4 stores the "linear" projections): "linear", "head" (the output projection), "embedding",
#: "norm", "head_norm" (Command-R+'s per-head QK-norm, a (heads, head_dim) tensor), "router", "experts" (fused
#: routed experts), "sinks" (gpt-oss's per-head attention sinks), "conv" (a Gated DeltaNet's depthwise
#: convolution), "decay" (its A_log and dt_bias), "biased_norm" (a LayerNorm's weight and bias, two vectors of half
#: its parameters each: DeepSeek Sparse Attention's indexer k_norm), "bare" (a parameter tensor on its parent with no
#: module of its own: DeepSeek-V4's position biases and hyper-connection weights), "none" (no weight)
WEIGHTS = ("linear", "head", "embedding", "norm", "head_norm", "router", "experts", "sinks", "conv", "decay",
           "biased_norm", "bare", "none")

#: LLaMA's own block (:class:`symllm.arch.layers.Variant`)
LLAMA = Variant()


@dataclass(frozen=True)
class Rules:
    """What a component declares for the code that splits, adapts, stores and runs it, set where the
    layer is defined (as Meta's ``ColumnParallelLinear`` / ``RowParallelLinear`` say it): nothing
    downstream looks a component up by its name. ``None`` is "not declared": :func:`linear` refuses a
    linear without its split, its LoRA names and its stacks.

    >>> r = Rules("column", lora=("wq", "q_proj"), weight="linear", stacks=keeps.hf_rules(keeps.nothing))
    >>> r.split, r.lora, "hf-eager" in r.stacks, Rules(stacks=()).stacks
    ('column', ('wq', 'q_proj'), True, StackRules())
    >>> Rules("diagonal")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: split: unknown 'diagonal' (known: all 13: see components.SPLITS)
    >>> w = Rules("replicated", engines=(("vllm", "column"),))
    >>> w.split_under("vllm"), w.split_under("sglang"), w.split_under(None)
    ('column', 'replicated', 'replicated')
    >>> Rules("replicated", engines=(("tensorflow", "column"),))
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: engines: unknown 'tensorflow' (known: vllm, mlc, gpt-fast, lmdeploy, hf, megatron)
    """

    #: how tensor parallelism splits it (:data:`SPLITS`); None: not declared (replicated if it has no shape)
    split: str | None = None
    #: (engine, split) pairs: the split an engine (:data:`symllm.arch.layers.LAYOUT_ENGINES`) lays it out by, where
    #: that differs from ``split`` (transformers' plan; :meth:`split_under`); (): every engine splits it by ``split``
    engines: tuple[tuple[str, str], ...] = ()
    #: the names LoRA adapts it by, symllm's then HF/PEFT's ``target_modules`` (("wq", "q_proj")); ():
    #: LoRA never adapts it; None: not declared
    lora: tuple[str, ...] | None = None
    #: what its weight is, for the weight formats (:data:`WEIGHTS`)
    weight: str = "none"
    #: each named stack (symllm.costs.stacks) that models it -> what that stack keeps for it
    #: (:class:`symllm.arch.keeps.Rule`: its saved and inference terms, in closed form); any other stack refuses
    #: a model holding it (``()``: none; None, not declared: every named stack refuses it)
    stacks: keeps.StackRules | None = None
    #: how a stack's refusal names it ("a sliding window (Mistral v0.1)"); "": the component's name
    label: str = ""
    #: LoRA targets (symllm names) under which PEFT adapts it in a way symllm does not model (Qwen3-MoE's
    #: fused experts, from gate_proj/up_proj/down_proj): a workload naming one is refused
    refused: tuple[str, ...] = ()
    #: the projections (symllm names) a fused linear holds (Phi-3's wqkv: wq, wk, wv): the default LoRA
    #: targets (wq, wv: PEFT's q_proj, v_proj) adapt it in a model that has no linear of theirs
    holds: tuple[str, ...] = ()
    #: its Hugging Face module name in its parent (``self_attn``, ``input_layernorm``; a top-level part its full
    #: name, ``model.embed_tokens``), as ``named_parameters`` has it; a linear's is its LoRA HF name (``lora``);
    #: "": none (``symllm verify`` refuses a checkpoint holding it, in one line); ".": no module of its own, its
    #: children's sit on its parent's (Gemma 4's MoE block: ``layers.N.router``, ``layers.N.experts``)
    hf: str = ""
    #: the Hugging Face names of its parameters where they sit bare on its parent's module, with no module of
    #: their own (the Gated DeltaNet's ``A_log`` and ``dt_bias``: ``linear_attn.A_log``, no ``.weight``), each an
    #: equal share of its parameters; (): a module of its own (``hf``)
    hf_params: tuple[str, ...] = ()
    #: its GGUF tensor name (gguf-py ``constants.py`` ``TENSOR_NAMES``: ``attn_q``, ``post_ffw_norm``); "": none
    gguf: str = ""
    #: the window an attention's keys lie in (:data:`symllm.arch.layers.WINDOWS`): "sliding", Mistral's last
    #: ``W`` keys, or "chunked", Llama 4's chunk of ``W``; "": every earlier key. The expected time runs a
    #: windowed core on the window's tiles (:func:`symllm.costs.stage_parts.windowed`)
    window: str = ""
    #: all-reduces of one fp32 statistic a token it sends across the tensor ranks in an inference forward, beside
    #: the residual stream's (vLLM's Mamba-2 gated norm whose one group spans the ranks:
    #: :func:`symllm.arch.components.mamba.spanning_norm`); 0: none
    stat_reduces: sp.Expr = sp.S.Zero
    #: forward only in training: run under ``torch.no_grad`` (transformers' ``DeepseekV32Indexer.forward`` and
    #: ``GlmMoeDsaIndexer.forward`` are ``@torch.no_grad()``: DeepSeek Sparse Attention's indexer) or on no path to
    #: the loss (DeepSeek-V4's ``DeepseekV4Indexer``, whose one output, the top-k indices, carries no gradient, so
    #: autograd frees what it recorded when the forward returns): its forward runs (again under full recomputation)
    #: but nothing under it is held for backward, its LoRA adapters' intermediates included, its parameters and
    #: adapters get no gradient and so no optimizer state (:meth:`Component.trained`; :mod:`symllm.costs.zero`), and
    #: its backward never runs (:meth:`Component.gradless`; :mod:`symllm.costs.decoding`'s training). True: always;
    #: or where an expression in the training prompt's ``s`` is 1 (0 elsewhere): a part on
    #: no path to the loss for some prompts only (DeepSeek-V4's compressor while its prompt closes no window)
    no_grad: bool | sp.Expr = False
    #: routed experts under transformers' plan (``moe_tp_experts``): the bytes of each routing weight the experts
    #: take beside their input, whose gradient ``MoeExpertsParallel`` all-reduces in backward (0: they take none, their
    #: input scaled by the router's scores before them: Llama 4's); None: the activations' ``β_a`` (set from the
    #: family's :attr:`symllm.arch.families.hf.Family.routing_weights` by :func:`symllm.arch.specs.hf_plan`)
    routing: sp.Expr | None = None
    #: the whole units a split of its weight keeps together where they are not the query heads (which every split
    #: keeps whole: :mod:`symllm.costs.checks`): a layout that splits it (:meth:`units_under`) needs tensor ranks
    #: dividing them, as vLLM's split of DeepSeek-V4's grouped output projection needs of its ``g_o`` groups
    #: (:data:`symllm.arch.components.compressed.VLLM`); None: none
    units: sp.Expr | None = None

    @property
    def forward_only(self) -> sp.Expr:
        """:attr:`no_grad` as a number: 1 where the part runs forward only in training, 0 where its backward runs.

        >>> idle = Rules(no_grad=1 - sp.Min(sp.floor(s / 4), 1)).forward_only  # while s < 4
        >>> Rules(no_grad=True).forward_only, Rules().forward_only, idle.subs(s, 3), idle.subs(s, 4)
        (1, 0, 1, 0)
        """
        return sp.sympify(int(self.no_grad)) if isinstance(self.no_grad, bool) else self.no_grad

    def __post_init__(self):
        if not isinstance(self.no_grad, sp.Expr):
            boolean("no_grad", self.no_grad)
        for field_, value, known in (("split", self.split, SPLITS), ("weight", self.weight, WEIGHTS),
                                     ("window", self.window or None, WINDOWS[1:])):
            if value is not None:
                choice(field_, value, known, see=f"components.{field_.upper()}S")
        if not isinstance(self.engines, tuple) or not all(isinstance(x, tuple) and len(x) == 2 for x in self.engines):
            raise SymllmError(f"engines: expected (engine, split) pairs, got {self.engines!r}")
        for name, split in self.engines:
            choice("engines", name, LAYOUT_ENGINES, see="layers.LAYOUT_ENGINES")
            choice("split", split, SPLITS, see="components.SPLITS")
        if len({name for name, _ in self.engines}) != len(self.engines):
            raise SymllmError(f"engines: an engine named twice in {self.engines!r}")
        if self.stacks is not None and not isinstance(self.stacks, keeps.StackRules):
            if isinstance(self.stacks, tuple) and self.stacks:
                raise SymllmError(f"stacks: expected stack name -> rule (symllm.arch.keeps), got {self.stacks!r}")
            object.__setattr__(self, "stacks", keeps.StackRules(self.stacks))
        for field_ in ("lora", "refused", "holds", "hf_params"):
            value = getattr(self, field_)
            if value is not None and (not isinstance(value, tuple) or not all(isinstance(x, str) for x in value)):
                raise SymllmError(f"{field_}: expected a tuple of names, got {value!r}")
        for field_ in ("hf", "gguf"):
            if not isinstance(getattr(self, field_), str):
                raise SymllmError(f"{field_}: expected a name, got {getattr(self, field_)!r}")
        if self.lora and len(self.lora) != 2:
            raise SymllmError(f"lora: expected (symllm name, HF name), got {self.lora!r}")
        if self.units is not None and not isinstance(self.units, sp.Expr):
            raise SymllmError(f"units: expected an expression in the model's sizes, got {self.units!r}")

    def split_under(self, engine: str | None) -> str | None:
        """The split ``engine`` lays this part out by: its own (:attr:`engines`), else ``split`` (None: no engine).

        >>> Rules("row", engines=(("vllm", "replicated"),)).split_under("vllm")
        'replicated'
        """
        return dict(self.engines).get(engine, self.split)

    def units_under(self, engine: str | None) -> sp.Expr | None:
        """The whole units (:attr:`units`) ``engine``'s layout splits this part into over the tensor ranks: None
        where that layout keeps it whole (``replicated``) or it declares none.

        >>> from symllm.arch.symbols import g_o
        >>> r = Rules("replicated", engines=(("vllm", "row"),), units=g_o)
        >>> r.units_under("vllm"), r.units_under(None), Rules("row").units_under("vllm")
        (g_o, None, None)
        """
        return None if self.split_under(engine) == "replicated" else self.units


@dataclass(frozen=True, repr=False)
class Component:
    """A part of the model with closed-form expressions for what it owns, and its children.

    Every cost lives on the component that owns it: parameters, matmul and element-wise FLOPs, KV-cache
    elements, the bytes a training forward saves for backward, and what an inference pass keeps live;
    and so do its :class:`Rules` (tensor-parallel split, LoRA names, kind of weight, stacks).
    :mod:`symllm.costs.phases` only composes these (phases, dtypes, memory kinds); it never looks at names.

    >>> from symllm.arch.components import attention, rmsnorm
    >>> c = rmsnorm("attention_norm")
    >>> c.params, c.total("params")
    (d, d)
    >>> attention()
    Component(attention: params 2*d*d_h*n_h + 2*d*d_h*n_kv; children wq, wk, wv, wo, rope, scores, context)
    """

    #: short name; breakdown keys join names with "/"
    name: str
    #: parameters this component owns itself (children excluded)
    params: sp.Expr = sp.S.Zero
    #: of those, what one token uses (None: all of them; routed experts: the k it is sent to; per GPU, a part held
    #: whole but read in part, split "held": the rank's share)
    active: sp.Expr | None = None
    #: matmul FLOPs of one forward pass (b sequences, s new tokens, t cached)
    flops: sp.Expr = sp.S.Zero
    #: element-wise FLOPs of that forward pass (see ELEMENTWISE)
    elementwise: sp.Expr = sp.S.Zero
    #: KV-cache elements held after that forward pass (keys and values of attention layers only)
    kv_cache: sp.Expr = sp.S.Zero
    #: bytes of every other per-sequence cache held after that pass (a Gated DeltaNet's recurrent and
    #: convolution states: symllm.arch.components.deltanet), constant in the context
    state_cache: sp.Expr = sp.S.Zero
    #: bytes a training forward over b × s tokens saves for backward (β_a per activation element)
    saved: sp.Expr = sp.S.Zero
    #: bytes kept per repeat when this component is a recomputation checkpoint (its input); 0: not one
    checkpoint: sp.Expr = sp.S.Zero
    #: activation elements live throughout an inference pass through this component (the residual stream)
    resident: sp.Expr = sp.S.Zero
    #: activation elements this component holds live at its peak, one candidate per situation
    #: (the inference working set is the resident stream plus the largest candidate of the whole tree)
    live: tuple = ()
    #: the ``eager`` stack's ``saved`` and ``live`` where they differ (None: the same): ``saved`` and ``live``
    #: are the default ``fused`` stack's (FlashAttention / SDPA: no s² tensor), these an unfused attention
    #: core's (its s² probabilities kept for backward, its scores and probabilities live)
    eager_saved: sp.Expr | None = None
    eager_live: tuple | None = None
    #: sub-components
    children: tuple[Component, ...] = ()
    #: how many times this component occurs in its parent
    repeat: sp.Expr = sp.S.One
    #: definitions substituted by closed_form(), e.g. d_ff := Meta's rounding of d
    definitions: tuple[tuple[sp.Symbol, sp.Expr], ...] = ()
    #: what this component is, and the line of Meta's llama/model.py it models
    doc: str = ""
    #: a linear layer's (fan_in, fan_out); () for anything else (LoRA adapts by it: symllm.costs.finetune)
    shape: tuple = ()
    #: its tensor-parallel split, LoRA names, weight kind and stacks (:class:`Rules`)
    rules: Rules = Rules()

    def __post_init__(self):
        for q in QUANTITIES + ("checkpoint", "resident", "repeat"):
            if getattr(self, q) is not None or q != "active":
                object.__setattr__(self, q, sp.sympify(getattr(self, q)))
        object.__setattr__(self, "live", tuple(sp.sympify(x) for x in self.live))
        if self.eager_saved is not None:
            object.__setattr__(self, "eager_saved", sp.sympify(self.eager_saved))
        if self.eager_live is not None:
            object.__setattr__(self, "eager_live", tuple(sp.sympify(x) for x in self.eager_live))

    def own(self, quantity: str) -> sp.Expr:
        """What this component owns of ``quantity``, children excluded."""
        if quantity == "eager_saved":  # the eager stack's saved bytes: its own where it declares them
            return self.saved if self.eager_saved is None else self.eager_saved
        choice("quantity", quantity, QUANTITIES)
        if quantity == "active" and self.active is None:
            return self.params
        return getattr(self, quantity)

    def total(self, quantity: str = "params") -> sp.Expr:
        """``quantity`` summed over this component and its children, times ``repeat``.

        >>> from symllm.arch.components import block
        >>> block().total("params")
        3*d*d_ff + 2*d*d_h*n_h + 2*d*d_h*n_kv + 2*d
        """
        idle = self.rules.forward_only if quantity in SAVED else sp.S.Zero
        if idle == 1:  # autograd records nothing under torch.no_grad, nor keeps what the loss cannot reach
            return sp.S.Zero
        inner = self.own(quantity) + sum((c.total(quantity) for c in self.children), sp.S.Zero)
        return self.repeat * (1 - idle) * inner

    def gradless(self, quantity: str = "flops", rest: bool = False) -> sp.Expr:
        """``quantity`` summed over the parts of this component that run forward only in training
        (:attr:`Rules.no_grad`: under ``torch.no_grad`` or on no path to the loss), repeats included (their
        backward never runs); ``rest``: over every other part instead (what runs a backward too).

        >>> from symllm.arch.components import latent_attention
        >>> sp.expand(latent_attention(sparse=True).gradless("params"))  # the indexer's
        d*d_I + d*n_I + d_I*n_I*r_q + 2*d_I
        >>> latent_attention().gradless(), latent_attention().gradless(rest=True) == latent_attention().total("flops")
        (0, True)
        """
        idle = self.rules.forward_only
        if idle == 1:
            return sp.S.Zero if rest else self.total(quantity)
        own = self.own(quantity) if rest else sp.S.Zero
        inner = self.repeat * (own + sum((c.gradless(quantity, rest) for c in self.children), sp.S.Zero))
        if idle == 0:
            return inner
        return (1 - idle) * inner if rest else idle * self.total(quantity) + (1 - idle) * inner

    def trained(self) -> Component:
        """This component with only the parts whose backward runs in training: a part that runs forward only
        (:attr:`Rules.no_grad`) left out, one that does so for some prompts only (an expression in ``s``) kept
        ``1 - that`` times. What gets a gradient and optimizer state: torch leaves the others' ``.grad`` None,
        and its optimizers create state lazily, for a parameter with a gradient only (:mod:`symllm.costs.zero`).

        >>> from symllm.arch.components import latent_attention
        >>> a = latent_attention(sparse=True)
        >>> a.trained().total("params") == a.gradless("params", rest=True), "indexer" in [c.name for c in a.walk()]
        (True, True)
        >>> "indexer" in [c.name for c in a.trained().walk()]
        False
        """
        idle = self.rules.forward_only
        if idle == 1:
            return Component(self.name)
        kept = tuple(c.trained() for c in self.children if c.rules.forward_only != 1)
        if idle == 0 and len(kept) == len(self.children) and all(k is c for k, c in zip(kept, self.children)):
            return self  # nothing under it runs forward only: itself (the caches keyed by it still hit)
        return self.replace(children=kept, repeat=self.repeat * (1 - idle),
                            rules=dataclasses.replace(self.rules, no_grad=False))

    def breakdown(self, quantity: str = "params") -> dict[str, sp.Expr]:
        """Leaf path -> that leaf's total over every repeat of it, in model order.

        >>> from symllm.arch.components import attention
        >>> list(attention().breakdown())
        ['wq', 'wk', 'wv', 'wo', 'rope', 'scores', 'context']
        """
        idle = self.rules.forward_only if quantity in SAVED else sp.S.Zero
        if not self.children or idle == 1:
            return {self.name: self.total(quantity)}
        out: dict[str, sp.Expr] = {}
        if self.own(quantity) != 0:
            out[self.name] = self.repeat * (1 - idle) * self.own(quantity)
        for c in self.children:
            for path, expr in c.breakdown(quantity).items():
                out[path if path == c.name else f"{c.name}/{path}"] = self.repeat * (1 - idle) * expr
        return out

    def walk(self):
        """This component and every descendant, depth first, in model order.

        >>> from symllm.arch.components import feed_forward
        >>> [c.name for c in feed_forward().walk()]
        ['feed_forward', 'w1', 'w2', 'w3']
        """
        yield self
        for c in self.children:
            yield from c.walk()

    def closed_form(self, quantity: str = "params") -> sp.Expr:
        """The total with this component's definitions substituted (e.g. Meta's d_ff rounding).

        >>> from symllm.arch.components import model
        >>> model(hidden="meta").closed_form().has(sp.ceiling)
        True
        """
        return substitute(self.total(quantity), dict(self.definitions))

    def child(self, path: str) -> Component:
        """The descendant at ``path`` ("block/attention"), relative to this component."""
        node = self
        for part in filter(None, path.split("/")):
            found = [c for c in node.children if c.name == part]
            if not found:
                raise SymllmError(f"component: no {part!r} in {node.name!r}")
            node = found[0]
        return node

    def replace(self, **changes) -> Component:
        """A copy with some fields changed (components are immutable)."""
        return dataclasses.replace(self, **changes)

    def __repr__(self):
        kids = f"; children {', '.join(c.name for c in self.children)}" if self.children else ""
        times = f" x {self.repeat}" if self.repeat != 1 else ""
        return f"Component({self.name}{times}: params {self.total('params') / self.repeat}{kids})"

    def _repr_latex_(self) -> str:
        """Jupyter: each non-zero parameter sub-term and the collected total, as typeset math.

        >>> from symllm.arch.components import rmsnorm
        >>> rmsnorm()._repr_latex_()
        '$$\\\\begin{aligned}N_{\\\\mathrm{rmsnorm}} &= d\\\\end{aligned}$$'
        """
        def label(name):
            leaf = name.rsplit("/", 1)[-1].replace("_", r"\_")
            return rf"N_{{\mathrm{{{leaf}}}}}"
        terms = [(k, v) for k, v in self.breakdown("params").items() if v != 0]
        lines = [rf"{label(k)} &= {sp.latex(v, symbol_names=LATEX)}" for k, v in terms] if len(terms) > 1 else []
        lines.append(rf"{label(self.name)} &= {sp.latex(collected(self.total('params')), symbol_names=LATEX)}")
        return "$$\\begin{aligned}" + r" \\ ".join(lines) + "\\end{aligned}$$"

    _repr_markdown_ = _repr_latex_  # Jupyter's Markdown renders the same $$ math


def collected(expr: sp.Expr) -> sp.Expr:
    """The shorter of the factored and the expanded form (readability, not a new formula).

    >>> collected(2 * d * d_h * n_h + 2 * d * d_h * n_kv)
    2*d*d_h*(n_h + n_kv)
    """
    return min([factored(expr), expanded(expr)], key=sp.count_ops)  # SymPy's factor and expand, faster


def matmul(rows: sp.Expr, inner: sp.Expr, cols: sp.Expr) -> sp.Expr:
    """FLOPs of a ``rows × inner`` by ``inner × cols`` product: the one place a multiply-add is 2 FLOPs.

    >>> matmul(b * s, d, d_ff)
    2*b*d*d_ff*s
    """
    return 2 * rows * inner * cols


def linear(name: str, fan_in: sp.Expr, fan_out: sp.Expr, bias: bool = False, doc: str = "", *,
           rules: Rules) -> Component:
    """A bias-optional linear layer over the ``b·s`` token rows, with its :class:`Rules` (a split, its LoRA
    names and its stacks must be declared).

    Parameters ``fan_in·fan_out`` (+ ``fan_out`` bias); FLOPs ``2·b·s·fan_in·fan_out``.

    >>> linear("wq", d, n_h * d_h, rules=linear_rules("column", "wq", "q_proj")).flops
    2*b*d*d_h*n_h*s
    >>> linear("wz", d, d, rules=Rules("column"))
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: linear: wz declares no LoRA decision (Rules.lora)
    """
    for field_, what in (("split", "tensor-parallel split"), ("lora", "LoRA decision"), ("stacks", "stack rule")):
        if getattr(rules, field_) is None:
            raise SymllmError(f"linear: {name} declares no {what} (Rules.{field_})")
    return Component(
        name,
        params=fan_in * fan_out + (fan_out if bias else 0),
        flops=matmul(T, fan_in, fan_out),
        elementwise=ELEMENTWISE["bias"] * T * fan_out if bias else 0,
        doc=doc or f"nn.Linear({fan_in}, {fan_out}, bias={bias})",
        shape=(sp.sympify(fan_in), sp.sympify(fan_out)),
        rules=rules,
    )


def linear_rules(split: str, ours: str, hf: str, gguf: str = "") -> Rules:
    """The rules of one of LLaMA's projections: its split, its LoRA names (symllm's, HF's), its GGUF name, a
    "linear" weight, and LlamaForCausalLM's stacks (which state its casts with its attention's or feed-forward's).

    >>> r = linear_rules("column", "wq", "q_proj", "attn_q")
    >>> r.split, r.lora, r.weight, r.gguf
    ('column', ('wq', 'q_proj'), 'linear', 'attn_q')
    """
    return Rules(split, lora=(ours, hf), weight="linear", stacks=keeps.hf_rules(keeps.nothing), gguf=gguf)


def named(comp: Component, hf: str, gguf: str = "") -> Component:
    """``comp`` with its Hugging Face and GGUF names declared (:attr:`Rules.hf`, :attr:`Rules.gguf`).

    >>> named(Component("norm"), "model.norm", "output_norm").rules.hf
    'model.norm'
    """
    return comp.replace(rules=dataclasses.replace(comp.rules, hf=hf, gguf=gguf))


def no_weight(keep=keeps.nothing) -> Rules:
    """The rules of a part without a weight that LlamaForCausalLM has: replicated, what its stacks keep ``keep``.

    >>> no_weight().split, no_weight().lora
    ('replicated', ())
    """
    return Rules("replicated", lora=(), stacks=keeps.hf_rules(keep))


#: a part without a weight of LlamaForCausalLM that keeps nothing of its own
NO_WEIGHT = no_weight()
#: a norm of the residual stream: replicated, its saved input split along the sequence under sequence parallelism
STREAM_NORM = Rules("sequence", lora=(), weight="norm", stacks=keeps.hf_rules(keeps.stream_norm))
#: the norm of the residual sum (ffn_norm): the same, and an inference moment of LlamaForCausalLM's stacks
SUM_NORM = dataclasses.replace(STREAM_NORM, stacks=keeps.hf_rules(keeps.stream_norm, moment=True))


def structure_of(structure: Structure | None, options: dict) -> Structure:
    """The structure a factory builds for: ``structure``, or a :class:`Structure` of ``options`` (its fields
    as keywords: ``model(tied=True)``); never both.

    >>> structure_of(None, {"tied": True}).tied
    True
    >>> structure_of(None, {"tide": True})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: tide: not a structural option (known: ...
    """
    if structure is None:
        unknown = sorted(set(options) - set(Structure.__dataclass_fields__))
        if unknown:
            raise SymllmError(with_list(f"{unknown[0]}: not a structural option (known: ",
                                        tuple(Structure.__dataclass_fields__), near=unknown[0]))
        return Structure(**options)
    if not isinstance(structure, Structure) or options:
        raise SymllmError("structure: give a Structure or its fields as keywords, not both")
    return structure


def check_switches(**flags) -> None:
    """Refuse a switch that is not a bool (``tied="no"`` is truthy; it must not count as tied).

    >>> check_switches(tied=True, bias=False)
    >>> check_switches(tied="no")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: tied: expected True or False, got 'no'
    """
    for name, value in flags.items():
        boolean(name, value)
