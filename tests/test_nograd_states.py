"""Training states of parameters that get no gradient: a part that runs forward only in training
(``Rules.no_grad``: DeepSeek Sparse Attention's indexer, DeepSeek-V4's, and DeepSeek-V4's compressors while the
prompt closes none of their windows) keeps its weights, but torch leaves its parameters' ``.grad`` None, so
``torch.optim.AdamW`` (foreach, fused and single-tensor alike: ``_init_group`` creates ``exp_avg``,
``exp_avg_sq`` and ``step`` only for a parameter whose grad is not None, torch 2.13.0) keeps no state for them, and
FSDP2 reduce-scatters and shards only the gradients that exist (``FSDPParamGroup.post_backward``'s
``fsdp_params_with_grad``).

Expected bytes come from torch itself: transformers' DeepSeek-V3.2 / GLM-5 and DeepSeek-V4 on the CPU in fp32, one
real forward, backward and AdamW step, then the bytes of every parameter, every gradient that exists and every
tensor in ``optimizer.state`` (the 0-dim ``step`` counters left out, as tests/test_optimizers.py does); and FSDP2
(``fully_shard``) over a fake process group for the ZeRO-3 shards. symllm's count is
:func:`symllm.costs.zero.optimizer_states` with fp32 weights and gradients (``master=False``: the HF stacks' layout,
what this loop keeps)."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.arch.config import from_hf
from symllm.costs import finetune, zero

from .conftest import requires
from .strategies import dsa_configs
from .test_dsv4 import _ONE_OF_EACH


def _step_bytes(model, ids, foreach: bool | None = None, fused: bool | None = None) -> dict:
    """One forward, backward and AdamW step of ``model`` on ``ids``: the bytes of its parameters, of the gradients
    that exist and of the optimizer's state tensors (0-dim step counters left out)."""
    torch = requires("torch")
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3, foreach=foreach,
                            fused=fused)
    model(ids).logits.float().sum().backward()
    opt.step()
    size = lambda t: t.numel() * t.element_size()  # noqa: E731
    return {"weights": sum(size(p) for p in model.parameters()),
            "gradients": sum(size(p.grad) for p in model.parameters() if p.grad is not None),
            "optimizer": sum(size(t) for s in opt.state.values() for t in s.values() if t.dim() > 0),
            "stepped": len(opt.state), "with_grad": sum(p.grad is not None for p in model.parameters())}


def _fp32_model(raw: dict):
    transformers, torch = requires("transformers"), requires("torch")
    config = transformers.AutoConfig.for_model(**raw, experts_implementation="eager", attn_implementation="eager")
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(config).float().train()


def _symllm(raw: dict, b: int, s: int, **values) -> int:
    cfg = from_hf(raw)
    return int(zero.optimizer_states(symllm.model_for(cfg), 0, "adamw", master=False).subs(
        {**symllm.values(cfg, batch=b, seq=s), **values}))


@given(dsa_configs(), st.integers(1, 2), st.integers(1, 4))
def test_the_indexers_weights_hold_no_gradient_and_no_adamw_state(raw, b, s):
    """transformers' DeepSeek-V3.2 / GLM-5 after one AdamW step: every parameter but the indexers' has a gradient
    and two moments; the indexers' (under torch.no_grad) only their fp32 weights. symllm's training states are the
    bytes torch holds: 4 bytes a parameter, 4 + 8 more for each that gets a gradient."""
    torch = requires("torch")
    model = _fp32_model(raw)
    got = _step_bytes(model, torch.randint(0, raw["vocab_size"], (b, s)))
    indexer = sum(p.numel() for n, p in model.named_parameters() if ".indexer." in n)
    assert indexer > 0 and all(p.grad is None for n, p in model.named_parameters() if ".indexer." in n)
    total = sum(p.numel() for p in model.parameters())
    assert (got["gradients"], got["optimizer"]) == (4 * (total - indexer), 8 * (total - indexer))
    assert _symllm(raw, b, s) == sum(got[k] for k in zero.PARTS) == 16 * total - 12 * indexer


@pytest.mark.parametrize("impl", [dict(foreach=True), dict(fused=True), dict(foreach=False)])
@pytest.mark.parametrize("s", [1, 2, 3, 4, 9])
def test_an_idle_compressor_and_the_indexer_hold_their_weights_only(s, impl):
    """tests/test_dsv4.py's fixed DeepSeek-V4 (one sliding layer, one HCA every 4 tokens, one CSA every 2 with
    its indexer), two sequences of s tokens, below, at and above each rate, under each of AdamW's three
    implementations: the indexer never has a gradient nor state, each compressor only where s reaches its rate
    (Rules.no_grad's expression in s); symllm's training states at that s equal the bytes torch holds."""
    torch = requires("torch")
    model = _fp32_model(_ONE_OF_EACH)
    got = _step_bytes(model, torch.randint(0, _ONE_OF_EACH["vocab_size"], (2, s)), **impl)
    closes = {1: s >= 4, 2: s >= 2}  # layer 1 HCA, layer 2 CSA

    def trained(name: str) -> bool:
        if ".indexer." in name:
            return False
        return ".compressor." not in name or closes[int(name.split(".layers.")[1].split(".")[0])]
    frozen = sum(p.numel() for n, p in model.named_parameters() if not trained(n))
    assert all((p.grad is not None) == trained(n) for n, p in model.named_parameters())
    assert got["stepped"] == got["with_grad"] < len(list(model.parameters()))
    total = sum(p.numel() for p in model.parameters())
    assert sum(got[k] for k in zero.PARTS) == 16 * total - 12 * frozen == _symllm(_ONE_OF_EACH, 2, s)


@pytest.mark.parametrize("s", [1, 4])
def test_lora_adapters_under_the_indexer_hold_no_gradient_and_no_state(s):
    """PEFT's LoRA on the fixed DeepSeek-V4 at rank 2, adapting every kv_proj and gate_proj (the attention's, the
    compressors' and the indexer's) and q_b_proj (the attention's and the indexer's): after a backward and an
    AdamW step the adapters' gradients and moments are those of the adapters that got a gradient (not the
    indexer's; the compressors' only where s reaches their rates), as symllm's lora_adapter_gradients and
    lora_optimizer_states count; lora_adapter_weights every adapter PEFT adds."""
    torch, peft = requires("torch"), requires("peft")
    from symllm.arch.symbols import r_lora
    model = peft.get_peft_model(_fp32_model(_ONE_OF_EACH),
                                peft.LoraConfig(r=2, target_modules=["kv_proj", "gate_proj", "q_b_proj"]))
    got = _step_bytes(model, torch.randint(0, _ONE_OF_EACH["vocab_size"], (2, s)))
    adapters = [p for n, p in model.named_parameters() if p.requires_grad]
    cfg = from_hf(_ONE_OF_EACH)
    values = {**symllm.values(cfg, batch=2, seq=s, dtype="fp32"), r_lora: 2}
    ours = {k: int(v.subs(values)) for k, v in finetune.memory(symllm.model_for(cfg), "kv_proj,gate_proj,q_b_proj",
                                                               rank=r_lora).items() if k.startswith("lora_adapter")
            or k == "lora_optimizer_states"}
    assert ours["lora_adapter_weights"] == 4 * sum(p.numel() for p in adapters)
    assert ours["lora_adapter_gradients"] == got["gradients"] < ours["lora_adapter_weights"]
    assert ours["lora_optimizer_states"] == got["optimizer"] == 2 * got["gradients"]


def test_fsdp2_shards_only_the_gradients_that_exist():
    """FSDP2 (``fully_shard``, fp32, no mixed precision) over a fake process group of 4 ranks, on a module whose
    second linear (8 -> 8 with a bias, 72 parameters) runs under torch.no_grad beside a trained one of the same
    size: rank 0 holds a quarter of every parameter (dim 0 split 8 / 4 = 2 rows), but a gradient shard and
    AdamW's moments only of the trained linear; by hand 4·(144/4) + 4·(72/4) + 8·(72/4) = 360 bytes, symllm's
    ZeRO-3 training states of the same tree at N_d = 4 (fp32 weights and gradients)."""
    torch = requires("torch")
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    from torch.testing._internal.distributed.fake_pg import FakeStore

    from symllm.arch import symbols as S
    from symllm.arch.components import Component, Rules

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.trained, self.frozen = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)

        def forward(self, x):
            with torch.no_grad():
                gate = self.frozen(x).argmax(-1, keepdim=True)  # as an indexer's top-k: no gradient
            return self.trained(x).gather(-1, gate)

    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=4)
    try:
        torch.manual_seed(0)
        net = Net()
        fully_shard(net)
        opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
        net(torch.randn(3, 8)).sum().backward()
        opt.step()
        local = lambda t: t.to_local().numel() * t.to_local().element_size()  # noqa: E731
        held = (sum(local(p) for p in net.parameters()) + sum(local(p.grad) for p in net.parameters() if p.grad is not None)
                + sum(local(t) for s in opt.state.values() for t in s.values() if t.dim() > 0))
        assert [p.grad is None for p in net.frozen.parameters()] == [True, True]
    finally:
        dist.destroy_process_group()
    tree = Component("net", children=(Component("trained", params=S.d * S.d + S.d),  # weight and bias
                                      Component("frozen", params=S.d * S.d + S.d, rules=Rules(no_grad=True))))
    ours = zero.optimizer_states(tree, 3, "adamw", master=False).subs({S.d: 8, S.N_d: 4})
    assert held == ours == 4 * 144 // 4 + 4 * 72 // 4 + 8 * 72 // 4 == 360


def test_deepseek_v32_training_states_by_hand():
    """deepseek-v3.2's 61 indexers hold F = 61·(1536·64·128 + 7168·128 + 2·128 + 7168·64) = 851,524,864
    parameters (wq_b, wk, k_norm's weight and bias, weights_proj) that get no gradient: at ZeRO 0 the mixed-precision
    states are 16 bytes a parameter but 2 (bf16 weights) for those, 16·P - 14·F with P the model's parameters (its
    count checked against transformers in tests/test_mla.py). Over 16 data-parallel ranks with the 256 routed
    experts on 8 (32 a rank: E = 32·58·3·7168·2048 of the per-GPU P) under ZeRO 1, rank 0 holds the weights and
    gradients whole and its optimizer part's share: the experts' over the 16/8 = 2 ranks holding the same
    experts, the rest's (less the indexers', which hold none) over 16 (rank 0's padded share)."""
    F = 61 * (1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64)
    w = symllm.workload("deepseek-v3.2", batch=1, seq=512)
    assert F == 851_524_864 and w["memory"]["training_states"] == 16 * w["params"]["per_gpu"] - 14 * F
    w = symllm.workload("deepseek-v3.2", batch=1, seq=512, dp=16, ep=8, zero_stage=1)
    P, E = w["params"]["per_gpu"], 32 * 58 * 3 * 7168 * 2048
    rest = P - E
    expected = 2 * rest + 2 * (rest - F) + 12 * -(-(rest - F) // 16) + 4 * E + 12 * -(-E // 2)
    assert w["memory_per_gpu"]["training_states"] == expected
