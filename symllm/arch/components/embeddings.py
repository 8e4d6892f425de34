"""The ends of the model: the token :func:`embedding` and the output projection :func:`lm_head`."""
from __future__ import annotations

import dataclasses

from symllm.arch import keeps
from symllm.arch.components.base import check_switches, T, Component, ELEMENTWISE, INDEX_BYTES, linear, matmul, Rules
from symllm.arch.symbols import b, beta_a, d, d_p, L, s_o, V, V_p

#: how each engine lays the vocabulary's parts out under tensor parallelism where that is not the parts' own split
#: (the embedding's "vocab", all-reduced, and the lm_head's "column", its logits gathered: vLLM's and SGLang's
#: ``VocabParallelEmbedding`` and ``ParallelLMHead``, TensorRT-LLM's PyTorch backend, Megatron's and torchtitan's):
#: engine -> (the embedding's split, the lm_head's split), each read in the engine's code (``Rules.engines``; every
#: name one of symllm.arch.layers.LAYOUT_ENGINES; docs/parallel.md says what each runs). "replicated": every rank
#: holds the whole table, a whole embedding looks its tokens up with no all-reduce, a whole head computes every logit
#: with no gather; "held": every rank holds the head's whole table but multiplies its share of the rows and gathers
#: the logits (symllm.arch.components.base.SPLITS: its memory the whole table, its FLOPs, bytes read and gather the
#: share's). transformers (``hf``) lays them out by its plan for the model's family, declared on the family
#: (symllm.arch.families.hf.Family.tp_plan): the parts' own splits unless a family's plan says otherwise (5.23's
#: ``init_parallel_plans`` adds the embedding's ``embedding_rowwise`` to a base model's plan; Nemotron-H's lm_head
#: and gpt-oss's embedding stay whole), its lm_head "gathered" (below).
VOCABULARY = {
    # transformers 5.23: every ``*ForCausalLM._tp_plan`` makes the lm_head ``colwise_gather_output``
    # (``ColwiseParallel(input_layouts=Replicate(), output_layouts=Replicate())``, distributed/tensor_parallel.py): its
    # rows split, its logits all-gathered whole on every rank, in training too, where the loss is taken over the whole
    # logits (no vocabulary-parallel loss): symllm.costs.collectives.gathered
    "hf": ("vocab", "gathered"),
    # MLC LLM's multi-GPU path shards only qkv, o_proj, gate_up and down (mlc-ai/mlc-llm 8e94910, 2023-10-04,
    # mlc_llm/relax_model/llama.py: ``shard_strategy`` "shard_qkv" at lines 238-239, "shard_o_proj_k" 266-267,
    # "shard_gate_up" and "shard_mlp_k" 155-158; ``self.embed_tokens = Embedding(vocab_size_var, ...)`` at 538 and
    # ``self.lm_head = Linear(config.hidden_size, vocab_size_var, ...)`` at 612 set none, and
    # mlc_llm/relax_model/commons.py's ``create_shard_info_func`` passes a parameter without one, line 85-86, so
    # every rank loads it whole; each rank looks its tokens up after ``ccl.broadcast_from_worker0(inputs)``,
    # llama.py 570-571, and computes every logit)
    "mlc": ("replicated", "replicated"),
    # gpt-fast's tp.py shards only attention's wqkv and wo and the feed-forward's w1, w3 and w2, all-reducing the
    # outputs of attention and the feed-forward (``_apply_tp_attn``, ``_apply_tp_ffn``, ``apply_tp``: the same at
    # pytorch-labs/gpt-fast c5d3454, 2023-12-16, the commit of the README's tensor-parallel table, at 141c69e,
    # 2024-05-06, and at c62c8f1, 2024-03-12, tp.py's last change); model.py's ``self.tok_embeddings =
    # nn.Embedding(config.vocab_size, config.dim)`` and ``self.output = nn.Linear(config.dim, config.vocab_size)``
    # stay whole on every rank, which looks its tokens up and computes every logit
    "gpt-fast": ("replicated", "replicated"),
    # lmdeploy's TurboMind at v0.1.0 (InternLM/lmdeploy 477f2db8a, 2023-12-18; the same at 379a2d5a6, 2023-12-25, the
    # benchmark page the rows cite, and at v0.2.0, b319dce67): LlamaWeight.cc allocates and loads
    # ``tok_embeddings.weight`` whole (vocab_size_padded x hidden_units) on every rank, and LlamaV2::embeddingLookup
    # reads it with no collective; it allocates ``post_decoder_embedding_kernel`` as ``hidden_units_ *
    # vocab_size_padded_`` (line 86) and loads the whole ``output.weight`` into it (105-107) on every rank, and
    # LlamaV2::postDecodeEmbedding's cuBLAS GEMM multiplies only that rank's ``local_vocab_size = vocab_size_padded_ /
    # world_size_`` rows (the kernel at ``+ tensor_para_.rank_ * local_vocab_size * hidden_units_``) and
    # ``ftNcclAllGather``s the fp32 logits (read 2026-11-29): the head held whole, read in part
    "lmdeploy": ("replicated", "held"),
}

#: the lm_head splits under which every tensor rank holds the whole logits: "gathered" (transformers'
#: ``colwise_gather_output``) and "replicated" (a plan that keeps the head whole: transformers' Nemotron-H; MLC's,
#: gpt-fast's, which train nothing); in training transformers' plan alone lays a head out so (``--engine hf``: its
#: loss, symllm.costs.loss_memory, and its routed experts' collectives, symllm.costs.collectives)
WHOLE_LOGITS = ("gathered", "replicated")


def _engines(part: int, split: str) -> tuple[tuple[str, str], ...]:
    """``Rules.engines`` of a vocabulary part (``part`` 0 the embedding, 1 the lm_head, whose own split is
    ``split``): the engines of :data:`VOCABULARY` that lay it out otherwise."""
    return tuple((name, splits[part]) for name, splits in VOCABULARY.items() if splits[part] != split)


def embedding(*, scale: bool = False) -> Component:
    """Token embedding ``V·d`` (a table look-up: no FLOPs); with ``scale`` (Gemma) the looked-up rows are
    multiplied by ``√d``, one element-wise FLOP per element and no parameter (a buffer).

    Models ``self.tok_embeddings = nn.Embedding(params.vocab_size, params.dim)``.

    >>> embedding().params, embedding(scale=True).elementwise
    (V*d, b*d*s)
    """
    check_switches(scale=scale)
    out = Component("embedding", params=V * d, saved=INDEX_BYTES * T,  # backward keeps the int64 token ids
                    doc="self.tok_embeddings = nn.Embedding(params.vocab_size, params.dim)",
                    # VocabParallelEmbedding; whole under the engines VOCABULARY names
                    rules=Rules("vocab", lora=(), weight="embedding", stacks=keeps.hf_rules(keeps.embedding),
                                hf="model.embed_tokens", gguf="token_embd", engines=_engines(0, "vocab")))
    if not scale:
        return out
    return out.replace(elementwise=ELEMENTWISE["scale"] * T * d,
                       doc="GemmaTextScaledWordEmbedding: embed_tokens(input_ids) * hidden_size**0.5",
                       rules=dataclasses.replace(out.rules, stacks=(), label="embeddings scaled by sqrt(d) (Gemma)"))


def lm_head(*, tied: bool = False, softcap: bool = False, scale: bool = False) -> Component:
    """The output projection ``d -> V``: ``V·d`` parameters untied, 0 tied (counted once, in the
    embedding), and ``2·b·s_o·d·V`` FLOPs either way over the ``s_o`` positions of each sequence whose logits
    are computed (``--logits``: 1, the last, by default at inference, as vLLM, SGLang, TensorRT-LLM and HF
    ``generate`` do: ``logits_to_keep``; ``s``, every position, in training: :mod:`symllm.costs.phases`), the
    ``b·s_o·V`` logits live; with ``softcap`` (Gemma 2) each logit is soft-capped,
    ``ELEMENTWISE['softcap']`` FLOPs per logit.

    >>> lm_head(tied=True).params, lm_head(tied=True).flops, lm_head().live
    (0, 2*V*b*d*s_o, (V*b*s_o,))
    >>> lm_head(tied="no")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: tied: expected True or False, got 'no'

    With ``scale`` (Command-R's ``logit_scale``) each logit is multiplied by a constant: one FLOP a logit,
    nothing saved (the product by a Python number keeps no tensor for backward).

    >>> lm_head(scale=True).elementwise
    V*b*s_o
    """
    check_switches(tied=tied, softcap=softcap, scale=scale)
    # ColumnParallelLinear over the vocabulary (its loss vocabulary-parallel); no LoRA target; transformers
    # keeps the output embedding out of bitsandbytes' quantization; as VOCABULARY says under an engine
    out = linear("lm_head", d, V, doc="self.output = nn.Linear(params.dim, params.vocab_size, bias=False)",
                 rules=Rules("column", lora=(), weight="head", stacks=keeps.hf_rules(keeps.lm_head), hf="lm_head",
                             gguf="output", engines=_engines(1, "column")))
    rows = b * s_o  # the positions whose logits are computed (hidden_states[:, -logits_to_keep:, :])
    # saves its input (training: every position); the logits are live
    out = out.replace(flops=matmul(rows, d, V), saved=beta_a * T * d, live=(rows * V,))
    if softcap:  # logits = tanh(logits / cap) * cap: element-wise, after the matmul
        out = out.replace(elementwise=ELEMENTWISE["softcap"] * rows * V, doc=out.doc + "; soft-capped logits",
                          saved=out.saved + beta_a * T * V,  # tanh's backward keeps its output
                          rules=dataclasses.replace(out.rules, stacks=(), label="soft-capped final logits (Gemma 2)"))
    if scale:  # logits = logits * self.logit_scale
        out = out.replace(elementwise=out.elementwise + ELEMENTWISE["scale"] * rows * V,
                          doc=out.doc + "; logits * logit_scale")
    return out.replace(params=0, doc=out.doc + " (tied to tok_embeddings)") if tied else out


_PER_LAYER = "per-layer embeddings (Gemma 4)"


def _per_layer_rules(weight: str, hf: str, gguf: str) -> Rules:
    """Per-layer embeddings' parts: in no tensor-parallel plan of transformers' Gemma4TextConfig (replicated), no
    LoRA target, no named stack; their Hugging Face and GGUF (gguf-py's ``PER_LAYER_*``) names."""
    return Rules("replicated", lora=(), weight=weight, stacks=(), label=_PER_LAYER, hf=hf, gguf=gguf)


def per_layer_embedding() -> tuple[Component, Component, Component]:
    """Gemma 4's per-layer embeddings, the model's part (``Gemma4TextModel``): a table of ``V_p`` rows of
    ``L·d_p`` (``embed_tokens_per_layer``, the rows looked up times ``√d_p``), a projection ``d -> L·d_p`` of the
    scaled token embeddings (``per_layer_model_projection``, times ``d^-1/2``), an RMSNorm of ``d_p`` over each
    layer's slice (``per_layer_projection_norm``), the two summed and times ``2^-1/2``: each layer's input of
    ``d_p`` (:func:`per_layer_input`). Element-wise: the three scales and the add, one each an element of
    ``b·s·L·d_p``, beside the norm's.

    >>> [c.params for c in per_layer_embedding()]
    [L*V_p*d_p, L*d*d_p, d_p]
    >>> sum(c.elementwise for c in per_layer_embedding())
    8*L*b*d_p*s
    """
    from symllm.arch.components.norms import rmsnorm
    rows = T * L * d_p
    # its shape (fan_in, fan_out) as a checkpoint stores it: V_p rows of L·d_p (not the token table's rows of d)
    table = Component("per_layer_embedding", params=V_p * L * d_p, elementwise=ELEMENTWISE["scale"] * rows,
                      shape=(L * d_p, V_p),
                      doc="self.embed_tokens_per_layer = Gemma4TextScaledWordEmbedding(vocab_size_per_layer_input, "
                          "num_hidden_layers * hidden_size_per_layer_input)  # rows * sqrt(d_p)",
                      rules=_per_layer_rules("embedding", "model.embed_tokens_per_layer", "per_layer_token_embd"))
    projection = linear("per_layer_model_projection", d, L * d_p,
                        doc="self.per_layer_model_projection = nn.Linear(hidden_size, num_hidden_layers * "
                            "hidden_size_per_layer_input)  # * hidden_size**-0.5",
                        rules=_per_layer_rules("linear", "model.per_layer_model_projection", "per_layer_model_proj"))
    projection = projection.replace(elementwise=ELEMENTWISE["scale"] * rows, saved=beta_a * T * d)  # its input
    norm = rmsnorm("per_layer_norm", d_p, T * L, "self.per_layer_projection_norm = Gemma4RMSNorm("
                   "hidden_size_per_layer_input); (projection + per_layer_inputs) * 2**-0.5",
                   _per_layer_rules("norm", "model.per_layer_projection_norm", "per_layer_proj_norm"))
    # (per_layer_projection + per_layer_inputs) * per_layer_input_scale: an add and a multiply an element
    return table, projection, norm.replace(elementwise=norm.elementwise + (ELEMENTWISE["residual"]
                                                                           + ELEMENTWISE["scale"]) * rows)


def per_layer_input(activation: str = "gelu_tanh", offset: bool = False) -> tuple[Component, Component, Component]:
    """Gemma 4's per-layer embeddings, a layer's part (``Gemma4TextDecoderLayer``, after the feed-forward's
    residual add): ``h + post_per_layer_input_norm(per_layer_projection(act(per_layer_input_gate(h)) * p))``,
    ``p`` the layer's input of ``d_p`` (:func:`per_layer_embedding`): a gate ``d -> d_p``, the model's activation
    and the product (element-wise on ``b·s·d_p``), a projection ``d_p -> d`` and an RMSNorm of ``d`` (the residual
    add is the block's). Saved for backward: the gate's input, the activation's input and output, ``p``, the
    projection's input.

    >>> [c.params for c in per_layer_input()], per_layer_input()[0].elementwise
    ([d*d_p, d*d_p, d], 10*b*d_p*s)
    """
    from symllm.arch.components.norms import rmsnorm
    gate = linear("per_layer_gate", d, d_p, doc="self.per_layer_input_gate = nn.Linear(hidden_size, "
                  "hidden_size_per_layer_input, bias=False)  # act_fn(...) * per_layer_input",
                  rules=_per_layer_rules("linear", "per_layer_input_gate", "inp_gate"))
    gate = gate.replace(elementwise=(ELEMENTWISE[activation] + ELEMENTWISE["gate"]) * T * d_p,
                        saved=beta_a * T * (d + 4 * d_p))
    projection = linear("per_layer_projection", d_p, d, doc="self.per_layer_projection = nn.Linear("
                        "hidden_size_per_layer_input, hidden_size, bias=False)",
                        rules=_per_layer_rules("linear", "per_layer_projection", "proj"))
    norm = rmsnorm("post_per_layer_norm", doc="self.post_per_layer_input_norm = Gemma4RMSNorm(hidden_size)",
                   rules=_per_layer_rules("norm", "post_per_layer_input_norm", "post_norm"), offset=offset)
    return gate, projection, norm
