"""Mixture-of-experts layers: the :func:`router`, the routed :func:`experts`, and :func:`moe` with its
shared experts (Llama 4's, Qwen2-MoE's gated one, DeepSeek's)."""
from __future__ import annotations

import dataclasses

import sympy as sp

from symllm.arch.components.base import check_switches, T, Component, ELEMENTWISE, linear, matmul, named, Rules
from symllm.arch.components.mlp import feed_forward
from symllm.arch.layers import Variant
from symllm.arch.symbols import beta_a, d, d_ff, d_lm, d_se, k, n_e
from symllm.errors import SymllmError


def router(*, bias: bool = False) -> Component:
    """The router of a mixture-of-experts layer: ``d -> n_e`` logits per token (``bias``: gpt-oss's), and
    their softmax (Mixtral; Llama 4 takes a sigmoid of the top k, gpt-oss a softmax of the top k: the same
    per-logit count is used).

    >>> router().params, router().flops, router(bias=True).params
    (d*n_e, 2*b*d*n_e*s, d*n_e + n_e)
    """
    # replicated on every tensor rank (torch's plan for Mixtral and Llama 4 leaves the gate out); PEFT's
    # LoRA for them targets the projections, not the gate; QLoRA keeps it in the model's dtype
    out = linear("router", d, n_e, bias, doc=f"self.gate = nn.Linear(hidden_size, num_local_experts, bias={bias})",
                 rules=Rules("replicated", lora=(), weight="router", stacks=(), label="a mixture-of-experts router",
                             hf="gate", gguf="ffn_gate_inp"))
    return out.replace(elementwise=out.elementwise + ELEMENTWISE["softmax"] * T * n_e)


def scaled_router() -> Component:
    """Gemma 4's router (``Gemma4TextRouter``): a weightless RMSNorm of the residual, times its ``scale`` (``d``
    numbers) and ``d^-1/2``, a ``d -> n_e`` projection ``proj``, the softmax of its logits, the top k of them
    renormalised, each times its expert's ``per_expert_scale`` (``n_e`` numbers). Element-wise work: the
    routers' convention, 5 per logit (:func:`router`), whatever the router computes.

    >>> r = scaled_router()
    >>> r.total("params"), r.total("flops"), r.total("elementwise")
    (d*n_e + d + n_e, 2*b*d*n_e*s, 5*b*n_e*s)
    """
    rules = Rules("replicated", lora=(), weight="router", stacks=(), label="Gemma 4's router")
    proj = linear("router_proj", d, n_e, doc="self.proj = nn.Linear(hidden_size, num_experts, bias=False)",
                  rules=dataclasses.replace(rules, hf="proj", gguf="ffn_gate_inp"))
    # two vectors held bare on the router's own module (nn.Parameter), in the model's dtype as the projection
    scale = Component("router_scale", params=d, doc="self.scale = nn.Parameter(torch.ones(hidden_size))",
                      rules=dataclasses.replace(rules, hf_params=("scale",)))
    per_expert = Component("per_expert_scale", params=n_e,
                           doc="self.per_expert_scale = nn.Parameter(torch.ones(num_experts))",
                           rules=dataclasses.replace(rules, hf_params=("per_expert_scale",)))
    return Component("router", elementwise=ELEMENTWISE["softmax"] * T * n_e, children=(proj, scale, per_expert),
                     doc="self.router = Gemma4TextRouter(config)",
                     rules=dataclasses.replace(rules, hf="router"))


def experts(*, bias: bool = False, clamped: bool = False, fused_lora: bool = False,
            activation: str = "silu", width: sp.Expr = d) -> Component:
    """``n_e`` routed SwiGLU experts of width ``d_ff``; each token runs ``k`` of them.

    Parameters ``3·d·d_ff`` per expert, all ``n_e`` of them (``active``: the ``k`` a token uses); FLOPs
    the ``k`` experts' three matmuls per token (the model's FLOPs: an implementation that runs every
    expert on every token, as transformers' Llama 4 does, computes ``n_e / k`` times as many). ``bias``:
    gpt-oss's biases, ``2·d_ff`` on the fused gate/up projection and ``d`` on the down projection of each
    expert; ``clamped``: gpt-oss's clamped SwiGLU (``ELEMENTWISE['clamped_glu']`` per element of ``d_ff``).
    ``fused_lora``: PEFT adapts these fused tensors under the SwiGLU's LoRA names (Qwen3-MoE), which symllm
    does not model: those targets are refused (``Rules.refused``). ``activation="relu2"``: Nemotron-H's ungated
    experts ``down_proj(relu(up_proj(x))²)`` (``NemotronHExperts``), ``2·d·d_ff`` each, two matmuls per pair.
    ``width``: the width ``x`` the experts read and write (``d``; Nemotron-3 Super's latent ``d_lm``: :func:`moe`),
    in place of ``d`` above. ``activation="gelu_tanh"``: Gemma 4's GeGLU experts (``Gemma4TextExperts``:
    ``gate_up_proj [n_e, 2·d_ff, d]``, ``down_proj [n_e, d, d_ff]``, ``gelu_pytorch_tanh(gate) * up``), the same
    parameters and matmuls, GeGLU's element-wise work.

    >>> e = experts()
    >>> e.params, e.active, e.flops
    (3*d*d_ff*n_e, 3*d*d_ff*k, 6*b*d*d_ff*k*s)
    >>> sp.factor(experts(bias=True).params - e.params)
    n_e*(d + 2*d_ff)
    >>> experts(activation="relu2").params, experts(activation="relu2").flops
    (2*d*d_ff*n_e, 4*b*d*d_ff*k*s)
    >>> experts(activation="relu2", width=d_lm).params
    2*d_ff*d_lm*n_e
    >>> experts(activation="gelu_tanh").params, experts(activation="gelu_tanh").elementwise
    (3*d*d_ff*n_e, b*k*s*(2*d + 10*d_ff))
    """
    rows = k * T  # token-expert pairs: each token's row goes through k experts
    x = width
    if activation == "relu2":
        if bias or clamped or fused_lora:
            raise SymllmError("activation: relu2 experts have no biases, clamp or fused LoRA names")
        return Component(
            "experts", params=2 * x * d_ff * n_e, active=2 * x * d_ff * k,
            flops=matmul(rows, x, d_ff) + matmul(rows, d_ff, x),
            elementwise=rows * (ELEMENTWISE["relu2"] * d_ff + ELEMENTWISE["combine"] * x),
            # saved: each pair's gathered input, its up_proj output and squared output, the down_proj output
            saved=beta_a * rows * (2 * x + 2 * d_ff),
            live=(2 * T * d_ff + T * x,),
            doc="NemotronHExperts: n_e x (up_proj [d_ff, d], down_proj [d, d_ff]); relu(x)**2, no gate",
            rules=Rules("expert", lora=(), weight="experts", stacks=(), label="routed experts", hf="experts"),
        )
    per = 3 * x * d_ff + ((2 * d_ff + x) if bias else 0)  # one expert's weights (and biases)
    if activation not in ("silu", "gelu_tanh"):
        raise SymllmError(f"activation: {activation} experts are not modelled (silu, gelu_tanh or relu2)")
    glu = ELEMENTWISE["clamped_glu"] if clamped else ELEMENTWISE[activation] + ELEMENTWISE["gate"]
    return Component(
        "experts", params=per * n_e, active=per * k,
        flops=2 * matmul(rows, x, d_ff) + matmul(rows, d_ff, x),
        elementwise=rows * (glu * d_ff + ELEMENTWISE["combine"] * x
                            + (ELEMENTWISE["bias"] * (2 * d_ff + x) if bias else 0)),
        # saved: each pair's gathered input, its w1 and w3 outputs, the w2 input, the w2 output (scaled)
        saved=beta_a * rows * (2 * x + 3 * d_ff),
        # experts run one after another: the largest expert's w1/w3 outputs and gated product (every token
        # routed to it), and the output being summed
        live=(3 * T * d_ff + T * x,),
        doc=("GptOssExperts: n_e x (gate_up_proj [d, 2 d_ff] + bias, down_proj [d_ff, d] + bias)" if bias
             else "Gemma4TextExperts: n_e x GeGLU(d, d_ff) (gate_up_proj, down_proj); top-k routing"
             if activation == "gelu_tanh"
             else "MixtralExperts / Llama4TextExperts: n_e x SwiGLU(d, d_ff); top-k routing"),
        # fused parameters, not linears: no LoRA target, kept in the model's dtype by QLoRA
        rules=Rules("expert", lora=(), weight="experts", stacks=(), label="routed experts", hf="experts",
                    refused=("w1", "w2", "w3") if fused_lora else ()),
    )


def _shexp(ffn: Component) -> Component:
    """A shared expert's feed-forward with its projections' GGUF names (gguf-py's ``FFN_*_SHEXP``: ``ffn_gate_shexp``,
    ``ffn_up_shexp``, ``ffn_down_shexp``), a dense MLP's ``ffn_gate`` ... with ``_shexp``."""
    return ffn.replace(children=tuple(named(c, c.rules.hf, f"{c.rules.gguf}_shexp") if c.rules.gguf else c
                                      for c in ffn.children))


def moe(*, shared: bool = False, gated: bool = False, bias: bool = False, clamped: bool = False,
        fused_lora: bool = False, shared_experts: bool = False, shared_bias: bool = False,
        activation: str = "silu", score_bias: bool = False, latent: bool = False,
        latent_bias: bool = False, scaled: bool = False) -> Component:
    """A mixture-of-experts feed-forward: router, ``n_e`` routed experts (``k`` per token), and with
    ``shared`` Llama 4's shared expert (a dense SwiGLU of width ``d_ff`` every token runs); ``gated`` makes
    it Qwen2-MoE's: of its own width ``d_se``, its output scaled by ``sigmoid(shared_expert_gate(x))``, a
    ``d -> 1`` linear. ``bias`` and ``clamped`` are gpt-oss's router and expert biases and clamped SwiGLU
    (:func:`router`, :func:`experts`); ``fused_lora`` is :func:`experts`'. ``shared_experts``: DeepSeek's
    (one SwiGLU of width ``d_se``, ``n_shared_experts × moe_intermediate_size``, every token runs;
    ``shared_bias``: DeepSeek-V2's ``mlp_bias`` on it). ``activation="relu2"``: Nemotron-H's ``NemotronHMoE``,
    ungated relu2 experts and shared expert (of width ``d_se``, ``moe_shared_expert_intermediate_size``).
    ``score_bias``: Laguna's router, whose
    ``e_score_correction_bias`` is a parameter of ``n_e`` numbers (its add is in the router's 5 per logit), and
    its routed sum scaled by ``moe_routed_scaling_factor`` (one multiply an element, always: 1.0 too).
    ``latent``: Nemotron-3 Super's latent experts (``NemotronHMoE`` with ``moe_latent_size``): the router and
    the shared expert read ``d``, the routed experts run in ``d_lm``, between ``fc1_latent_proj`` (``d -> d_lm``)
    and ``fc2_latent_proj`` (``d_lm -> d``), each with a bias under ``latent_bias`` (the config's ``mlp_bias``).
    ``scaled``: Gemma 4's router (:func:`scaled_router`); its router and experts sit on the decoder layer itself
    (``layers.N.router``, ``layers.N.experts``), beside the dense MLP (:func:`symllm.arch.components.block`).

    >>> moe().total("params"), moe().total("active")
    (3*d*d_ff*n_e + d*n_e, 3*d*d_ff*k + d*n_e)
    >>> sp.expand(moe(shared=True).total("params") - moe().total("params"))
    3*d*d_ff
    >>> sp.expand(moe(shared=True, gated=True).total("params") - moe().total("params"))
    3*d*d_se + d
    >>> sp.expand(moe(shared_experts=True).total("params") - moe().total("params"))
    3*d*d_se
    >>> sp.expand(moe(shared_experts=True, activation="relu2").total("params"))
    2*d*d_ff*n_e + 2*d*d_se + d*n_e
    >>> sp.expand(moe(activation="relu2", latent=True).total("params"))
    2*d*d_lm + d*n_e + 2*d_ff*d_lm*n_e
    >>> moe(scaled=True, activation="gelu_tanh").total("active")
    3*d*d_ff*k + d*n_e + d + n_e
    """
    check_switches(shared=shared, gated=gated, bias=bias, clamped=clamped, fused_lora=fused_lora,
                   shared_experts=shared_experts, shared_bias=shared_bias, score_bias=score_bias, latent=latent,
                   latent_bias=latent_bias, scaled=scaled)
    if latent_bias and not latent:
        raise SymllmError("latent_bias: biases on latent projections the layer does not have (latent=False)")
    if gated and not shared:
        raise SymllmError("gated: a gate without a shared expert (gated=True needs shared=True)")
    if shared and shared_experts:
        raise SymllmError("shared_experts: a layer has Llama 4's shared expert or DeepSeek's, not both")
    extra = ()
    if shared:
        width = d_se if gated else d_ff
        ffn = _shexp(feed_forward(name="shared_expert", width=width))
        extra = (ffn.replace(saved=beta_a * 3 * T * width,  # its input is the router's, counted once here
                             elementwise=ffn.elementwise + ELEMENTWISE["shared"] * T * d,  # added to the routed sum
                             doc="self.shared_expert = Llama4TextMLP(config)  # every token" if not gated else
                             "self.shared_expert = Qwen2MoeMLP(config, shared_expert_intermediate_size)"),)
    if shared_experts:
        ffn = _shexp(feed_forward(name="shared_experts", width=d_se, bias=shared_bias,
                                  variant=Variant(activation=activation)))
        kept = 2 if activation == "relu2" else 3  # relu2: up_proj's output and its square; SwiGLU: w1, w3, w2's input
        extra = (ffn.replace(saved=beta_a * kept * T * d_se,  # its input is the router's, counted once here
                             elementwise=ffn.elementwise + ELEMENTWISE["shared"] * T * d,  # added to the routed sum
                             doc="self.shared_experts = MLP(self.dim, args.n_shared_experts * args.moe_inter_dim)"
                                 "  # every token"),)
    if gated:
        # F.sigmoid(self.shared_expert_gate(x)) * shared_expert_output: a d -> 1 linear (replicated on every
        # tensor rank, as transformers' plan leaves it; PEFT adapts it only when named), its sigmoid, the product
        gate = linear("shared_expert_gate", d, 1,
                      doc="self.shared_expert_gate = torch.nn.Linear(hidden_size, 1, bias=False)",
                      rules=Rules("replicated", lora=("shared_expert_gate", "shared_expert_gate"), weight="linear",
                                  stacks=(), label="a gated shared expert (Qwen2-MoE)", gguf="ffn_gate_inp_shexp"))
        extra += (gate.replace(elementwise=ELEMENTWISE["sigmoid"] * T + ELEMENTWISE["gate"] * T * d,
                               saved=beta_a * (T + T * d)),)  # the gate's sigmoid; the shared expert's output
    _router = scaled_router() if scaled else router(bias=bias)
    routed = (experts(bias=bias, clamped=clamped, fused_lora=fused_lora, activation=activation,
                      width=d_lm if latent else d),)
    if latent:  # NemotronHMoE: fc2_latent_proj(experts(fc1_latent_proj(x))); replicated (vLLM's ReplicatedLinear)
        rules = Rules("replicated", lora=(), weight="linear", stacks=(), label="latent experts (Nemotron-3 Super)")
        # GGUF (gguf-py's nemotron_h mapping): fc1_latent_proj is ffn_latent_down, fc2_latent_proj ffn_latent_up
        down = linear("fc2_latent_proj", d_lm, d, latent_bias,
                      rules=dataclasses.replace(rules, hf="fc2_latent_proj", gguf="ffn_latent_up"),
                      doc=f"self.fc2_latent_proj = nn.Linear(moe_latent_size, hidden_size, bias={latent_bias})")
        routed = (linear("fc1_latent_proj", d, d_lm, latent_bias,
                         rules=dataclasses.replace(rules, hf="fc1_latent_proj", gguf="ffn_latent_down"),
                         doc=f"self.fc1_latent_proj = nn.Linear(hidden_size, moe_latent_size, bias={latent_bias})"),
                  *routed,
                  down.replace(saved=beta_a * T * d_lm))  # its input, the routed sum in the latent width
    if score_bias:  # Laguna: self.e_score_correction_bias = nn.Parameter(torch.zeros(num_experts))
        _router = _router.replace(params=_router.params + n_e)
    return Component(
        "moe", saved=beta_a * (T * d + T * n_e),  # the normed input; the routing probabilities
        elementwise=ELEMENTWISE["scale"] * T * d if score_bias else 0,  # Laguna: routed sum * routed_scaling_factor
        children=(_router, *routed, *extra),
        doc="MixtralSparseMoeBlock / Llama4TextMoe / DeepseekV3MoE: route each token to k of n_e experts",
        rules=Rules("replicated", lora=(), stacks=(), label="mixture-of-experts layers (Mixtral, Llama 4, DeepSeek)",
                    hf="." if scaled else "mlp"),  # Gemma 4: no module of its own (router, experts on the layer)
    )
