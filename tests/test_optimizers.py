"""Optimizers (issue 22 item 6): training states and training peaks per ``Workload.optimizer``.

Expected numbers come from the optimizers themselves on the CPU, never from symllm: the bytes of every
tensor torch's AdamW (foreach, fused, single-tensor), SGD (with and without momentum) and transformers'
Adafactor keep in ``optimizer.state`` after a step (0-dimensional step counters left out: a few bytes per
tensor, not modelled), and ``MemTracker``'s peak over a steady-state training step of transformers'
``LlamaForCausalLM`` (the loop of tests/test_training_peak.py with each optimizer). bitsandbytes does not
install on this CPU: its 8-bit AdamW is checked against its published state layout (``Optimizer2State``:
two uint8 states of the parameter's shape and one fp32 absmax per block of 256 values each).
"""
import pytest

import symllm
from symllm.arch.config import ModelConfig
from symllm.costs import zero
from symllm.arch.dtypes import OPTIMIZERS
from symllm.errors import SymllmError

from .conftest import requires
from .test_stacks import _hf
from .test_training_peak import _step

#: small untied config; every tensor's shape is known (V 200, d 32, d_ff 80, 2 layers, 4 heads of 8, 2 kv)
CFG = dict(vocab_size=200, dim=32, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=8, hidden_dim=80,
           tie_embeddings=False)


def _optimizer(name, params, torch):
    if name == "adamw":
        return torch.optim.AdamW(params, foreach=True)
    if name == "adamw-fused":
        return torch.optim.AdamW(params, fused=True)
    if name == "adamw-single":
        return torch.optim.AdamW(params, foreach=False)
    if name == "sgd-momentum":
        return torch.optim.SGD(params, lr=0.01, momentum=0.9, foreach=True)
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.01)
    if name == "adafactor":
        return requires("transformers").optimization.Adafactor(params)  # beta1=None: no first moment
    raise AssertionError(name)


TORCH_OPTIMIZERS = [o for o in OPTIMIZERS if o != "adamw-8bit"]


@pytest.mark.parametrize("name", TORCH_OPTIMIZERS)
def test_training_states_are_what_the_optimizer_keeps(name):
    """hf-sdpa's training states (fp32 weights and gradients, the optimizer's state) are the bytes of the
    model's parameters and gradients and of every tensor in optimizer.state after a step, exactly."""
    torch = requires("torch")
    torch.manual_seed(0)
    model = _hf(CFG, "sdpa").train()
    opt = _optimizer(name, model.parameters(), torch)
    ids = torch.randint(0, 200, (1, 8))
    _step(model, opt, ids, ids.clone(), torch)
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()  # the gradients held as the next step begins
    params = sum(p.nbytes for p in model.parameters())
    grads = sum(p.grad.nbytes for p in model.parameters())
    state = sum(t.nbytes for s in opt.state.values() for t in s.values() if torch.is_tensor(t) and t.dim() > 0)
    predicted = symllm.workload(ModelConfig(**CFG), stack="hf-sdpa", optimizer=name)["memory"]["training_states"]
    assert predicted == params + grads + state, (predicted, params, grads, state)


def test_eight_bit_adamw_is_bitsandbytes_published_layout():
    """adamw-8bit: per tensor of n values bitsandbytes keeps two uint8 states (2n bytes) and two fp32 absmax
    vectors of ceil(n/256) (bitsandbytes/optim/optimizer.py, Optimizer2State.init_state, blocksize 256): a model
    whose tensors are all multiples of 256 holds exactly 2 + 8/256 bytes of state a parameter."""
    cfg = dict(vocab_size=256, dim=256, n_layers=1, n_heads=4, n_kv_heads=2, head_dim=64, hidden_dim=512,
               tie_embeddings=False)
    m = symllm.workload(ModelConfig(**cfg), stack="hf-sdpa", optimizer="adamw-8bit")["memory"]
    tensors = [256 * 256, 256 * 256, 256 * 128, 256 * 128, 256 * 256] + [256 * 512] * 3 \
        + [256] * 3 + [256 * 256]  # embed, q, k, v, o, gate/up/down, 3 norms, lm_head
    state = sum(2 * n + 2 * 4 * -(-n // 256) for n in tensors)
    N = symllm.params(ModelConfig(**cfg))["total"]
    assert N == sum(tensors)
    assert m["training_states"] == 8 * N + state


def measured_peak(name, model, ids, torch) -> int:
    mem_tracker = requires("torch.distributed._tools.mem_tracker")
    opt = _optimizer(name, model.parameters(), torch)
    _step(model, opt, ids, ids.clone(), torch)  # the first step creates the states
    tracker = mem_tracker.MemTracker()
    tracker.track_external(model, opt, ids)
    with tracker:
        _step(model, opt, ids, ids.clone(), torch)
    return sum(dev["Total"] for dev in tracker.get_tracker_snapshot("peak").values())


@pytest.mark.parametrize("name", TORCH_OPTIMIZERS)
def test_training_peak_follows_the_optimizer(name):
    """A short sequence (1 × 8 tokens) puts the peak in the optimizer's step: hf-sdpa's training peak under
    each optimizer is MemTracker's peak of a steady-state step within 3% (foreach AdamW's copy of a moment,
    the fused kernel's none, single-tensor AdamW's and Adafactor's per-tensor temporaries)."""
    torch = requires("torch")
    torch.manual_seed(0)
    model = _hf(CFG, "sdpa").train()
    ids = torch.randint(0, 200, (1, 8))
    measured = measured_peak(name, model, ids, torch)
    predicted = symllm.workload(ModelConfig(**CFG), stack="hf-sdpa", batch=1, seq=8,
                                optimizer=name)["memory"]["training_peak"]
    print(f"{name}: predicted/measured = {predicted / measured:.4f}")
    assert abs(predicted / measured - 1) < 0.03, (predicted, measured)


def test_optimizers_under_zero_and_in_the_component_stacks():
    """The fused stack: 2 + 2 bytes of bf16 weights and gradients and the optimizer part (fp32 master weights
    and the state) per parameter, which ZeRO-1 shards; the default is foreach AdamW, today's 16 bytes."""
    N = symllm.params("llama3.2-1b")["total"]
    per = {"adamw": 16, "adamw-fused": 16, "adamw-single": 16, "sgd-momentum": 12, "sgd": 8}
    for name, b in per.items():
        assert symllm.workload("llama3.2-1b", optimizer=name)["memory"]["training_states"] == b * N
        sharded = symllm.workload("llama3.2-1b", optimizer=name, zero_stage=1, dp=4)["memory"]["training_states"]
        assert sharded == 4 * N + (b - 4) * -(-N // 4)
    assert symllm.workload("llama3.2-1b")["memory"] == symllm.workload("llama3.2-1b", optimizer="adamw")["memory"]
    with pytest.raises(SymllmError, match="^optimizer: "):
        symllm.workload("llama3.2-1b", optimizer="lion")


def test_cli_optimizer(cli):
    r = cli(["count", "llama3.2-1b", "--json", "--optimizer", "sgd"])
    assert r.code == 0 and '"optimizer": "sgd"' in r.out
    r = cli(["count", "llama3.2-1b", "--optimizer", "adam"])
    assert r.code == 2 and r.err.startswith("symllm: error: optimizer: ")
    assert zero.layout("adamw") == zero.MIXED_PRECISION_ADAM
