"""Shared test helpers: the published parameter totals, a CLI runner, optional imports that skip
locally but fail under CI, and the Hypothesis profiles.

Test modules import the plain helpers with ``from .conftest import PUBLISHED, requires``; the
fixtures (``published``, ``cli``, ``torch``, ``reference``, ``meta_model``, ``preset_numel``,
``symllm_cache``, ``within_a_minute``) are requested by name as usual.
"""
from __future__ import annotations

import functools
import importlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, settings

#: CI=true (any non-empty value): optional dependencies are installed, so a missing one is a failure
CI = bool(os.environ.get("CI"))

DATA = Path(__file__).parent / "data"

#: Every figure published outside symllm (checkpoint metadata, model cards, papers, run logs), in one file,
#: each with its source: preset name -> {"total": int, "source": str} for an exact total, and/or
#: {"about": {quantity: {"value": float, "within": relative tolerance, "source": str}}} for a rounded one
#: ("17B active"). Loaded at import so that parametrize can use it.
_FIGURES: dict[str, dict] = json.loads((DATA / "published_params.json").read_text(encoding="utf-8"))
#: the exact totals: preset name -> {"total": int, "source": str}
PUBLISHED: dict[str, dict] = {k: v for k, v in _FIGURES.items() if "total" in v}
#: the rounded figures: (preset name, quantity of symllm.params) -> {"value", "within", "source"}
PUBLISHED_ABOUT: dict[tuple[str, str], dict] = {(k, q): f for k, v in _FIGURES.items()
                                                for q, f in v.get("about", {}).items()}

#: Hypothesis profiles, the only place example counts are set (no test pins ``max_examples``):
#: ``ci`` (under CI=true): derandomised, so a failure reproduces, with few examples per property (the same
#: ones on every run: the simplest draw and two more; each example of an oracle property builds and runs
#: torch models, so this count is most of the properties' cost: 24 CPU-s at five examples, 17 at three);
#: ``dev`` (a local run): 10 per property, drawn at random, so that repeated local runs explore;
#: ``long`` (``SYMLLM_PROFILE=long python -m pytest``): random, 1,000 examples per property, at least what
#: any property ran before the profiles (the fuzz tests' 700 included); it takes hours.
EXAMPLES = {"ci": 3, "dev": 10, "long": 1000}
_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])  # shared machines are noisy
settings.register_profile("ci", max_examples=EXAMPLES["ci"], derandomize=True, print_blob=True, **_COMMON)
settings.register_profile("dev", max_examples=EXAMPLES["dev"], **_COMMON)
settings.register_profile("long", max_examples=EXAMPLES["long"], **_COMMON)
PROFILE = os.environ.get("SYMLLM_PROFILE") or ("ci" if CI else "dev")
settings.load_profile(PROFILE)


@pytest.fixture(scope="session", autouse=True)
def symllm_cache() -> Path:
    """The suite's cache folder (the xdist workers share it), fresh and empty at the start: the rootdir's
    conftest.py sets SYMLLM_CACHE_DIR to it before collection, so that nothing reads or writes the user's
    ~/.cache/symllm."""
    folder = Path(os.environ["SYMLLM_CACHE_DIR"])
    assert folder.name.startswith("symllm-cache-"), folder
    return folder


def llama_blocks(name: str) -> bool:
    """Whether a preset's blocks are LLaMA's (what the torch reference and Meta's formulas build): not Phi-3's
    fused projections, OLMo 2's or Gemma's norms and activations (tests/test_dense_families.py checks those
    against transformers' own classes)."""
    import symllm
    from symllm.arch.components import Variant
    return symllm.spec(name).structure.variant == Variant() and symllm.load(name).qk_norm != "full"


def one_per_shape(names, first: str | None = None) -> list[str]:
    """One preset of each family and shape among ``names`` (``first`` first, then in order): presets whose
    config.json differ only in sizes (the same keys stated, so a default transformers fills in is filled in
    for all of them; every field that is a number the same up to zero or not, the same flags, words and
    derived fields; a head width equal to ``d / n_h`` or not; the same kinds of layers in the same order)
    run the same code path with other numbers, so a per-preset check of a code path needs one of them. Read
    from the preset files and the loaded configs (a tenth of a second for every preset, at collection)."""
    import dataclasses
    import symllm
    from symllm.arch.config import preset_info
    groups = {}
    for name in sorted(names, key=lambda n: n != first):
        cfg, raw = symllm.load(name), preset_info(name)["config"]
        shape = tuple((f.name, v if v is None or isinstance(v, (bool, str, frozenset)) else bool(v))
                      for f in dataclasses.fields(cfg) if f.name not in ("name", "layers", "note")
                      for v in [getattr(cfg, f.name)])
        groups.setdefault((raw.get("model_type"), frozenset(raw), shape, cfg.head_dim * cfg.n_heads == cfg.dim,
                           tuple(kind for kind, _ in cfg.groups)), name)
    return [n for n in names if n in groups.values()]


def requires(name: str) -> ModuleType:
    """Import and return module ``name`` (dotted names too, e.g. ``"dask.array"``).

    When it cannot be imported the calling test is skipped, or, called at module level, the whole
    module is. Under CI=true the environment installs every optional dependency (torch, dask,
    nbclient, ...), so there a missing module is a hard failure, never a skip.
    """
    __tracebackhide__ = True  # report the skip at the caller, not here
    try:
        return importlib.import_module(name)
    except ImportError as e:
        if CI:
            pytest.fail(f"CI=true and {name} cannot be imported: {e}", pytrace=False)
        pytest.skip(f"{name} is not installed ({e})", allow_module_level=True)


def gguf_name(names, hf: str) -> str | None:
    """The GGUF tensor name gguf-py's TensorNameMap ``names`` (``gguf.get_tensor_name_map``) gives the HF parameter
    ``hf``, with its ``.weight`` or ``.bias`` (``.weight`` where the map's key carries no suffix: merged experts);
    None where the map has no name for it."""
    name = names.get_name(hf, try_suffixes=(".weight", ".bias"))
    if name is None:
        return None
    return name if name.endswith((".weight", ".bias")) else f"{name}.weight"


def cache_bytes(cache, names) -> int:
    """Bytes of the tensors transformers' ``cache`` holds under ``names`` in each layer (a tensor, or a dict of
    them: ``keys``, ``values``, ``conv_states``, ``recurrent_states``)."""
    torch = requires("torch")
    total = 0
    for layer in cache.layers:
        for name in names:
            value = getattr(layer, name, None)
            for x in (value.values() if isinstance(value, dict) else [value]):
                if isinstance(x, torch.Tensor):
                    total += x.numel() * x.element_size()
    return total


def prefill_and_steps(model, ids, steps: int = 1) -> tuple[list[int], int, int]:
    """What torch measures of a generation with transformers' ``model``: FlopCounterMode's FLOPs of a prefill
    of ``ids`` (the last position's logits) and of each of ``steps`` decode steps through its cache, and the
    bytes the cache holds after the prefill in keys and values and in other states (convolution and
    recurrent): ``([prefill, step, ...], kv, state)``."""
    torch = requires("torch")
    from torch.utils.flop_counter import FlopCounterMode
    flops = []
    with torch.no_grad():
        with FlopCounterMode(display=False) as prefill:
            cache = model(ids, use_cache=True, logits_to_keep=1).past_key_values
        flops.append(prefill.get_total_flops())
        kv, state = cache_bytes(cache, ("keys", "values")), cache_bytes(cache, ("conv_states", "recurrent_states"))
        for _ in range(steps):
            with FlopCounterMode(display=False) as step:
                model(ids[:, -1:], past_key_values=cache, use_cache=True)
            flops.append(step.get_total_flops())
    return flops, kv, state


def generate(raw: dict, b: int, s: int, n: int) -> tuple[list[int], int, int]:
    """FLOPs of a prefill of ``s`` tokens, then of each of ``n`` decode steps, through transformers' own cache
    (eager attention and experts, CPU; every position's logits), the K/V elements that cache holds afterwards
    and its sliding layers: ``(steps, held, sliding)``."""
    transformers, torch = requires("transformers"), requires("torch")
    from torch.utils.flop_counter import FlopCounterMode
    # eager experts (each expert's matmuls over the tokens routed to it, which FlopCounterMode counts; the
    # default grouped_mm kernel needs aligned strides on the CPU)
    config = transformers.AutoConfig.for_model(**raw, attn_implementation="eager", experts_implementation="eager")
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    cache, steps = transformers.DynamicCache(config=model.config), []
    # every position's logits, as a slice: Gemma 4's forward otherwise slices per_layer_inputs before its
    # KV-shared layers, None without per-layer embeddings (a TypeError in transformers' own code)
    every = {"logits_to_keep": slice(0, None)} if raw["model_type"] == "gemma4_text" else {}
    with torch.no_grad():
        for tokens in [s] + [1] * n:
            with FlopCounterMode(display=False) as counter:
                model(torch.zeros(b, tokens, dtype=torch.long), past_key_values=cache, use_cache=True, **every)
            steps.append(counter.get_total_flops())
    sliding = sum(type(layer).__name__ == "DynamicSlidingWindowLayer" for layer in cache.layers)
    # a layer sharing another's keys and values holds none (a DummyLayer: keys and values None)
    return steps, sum(layer.keys.numel() + layer.values.numel() for layer in cache.layers
                      if layer.keys is not None), sliding


def training_step_flops(model, vocab: int, b: int, s: int) -> int:
    """FlopCounterMode's FLOPs of one training step of transformers' ``model`` on CPU: a forward of ``b``
    random sequences of ``s`` tokens with every position's logits, then the backward of their sum."""
    torch = requires("torch")
    from torch.utils.flop_counter import FlopCounterMode
    torch.manual_seed(0)
    tokens = torch.randint(0, vocab, (b, s))
    with FlopCounterMode(display=False) as counter:
        model(tokens).logits.sum().backward()
    return counter.get_total_flops()


def steps_and_caches_agree(model, raw: dict, b: int, s: int) -> None:
    """symllm's prefill and decode-step FLOPs and its KV and state caches (fp32) equal what
    :func:`prefill_and_steps` measures of transformers' ``model`` (from config.json ``raw``) on ``b`` random
    sequences of ``s`` tokens."""
    import symllm
    from symllm.arch.config import from_hf
    ids = requires("torch").randint(0, raw["vocab_size"], (b, s))
    (prefill, decode), kv, state = prefill_and_steps(model, ids)
    work = symllm.workload(from_hf(raw), batch=b, seq=s, dtype="fp32")
    assert (work["flops"]["prefill"], work["flops"]["decode_token"]) == (prefill, decode)
    assert (work["memory"]["kv_cache"], work["memory"].get("state_cache", 0)) == (kv, state)


def assert_refused_in_one_line(cli, folder: Path, raw: dict, start: str, command: str = "count") -> None:
    """``from_hf(raw)`` raises a one-line SymllmError starting with ``start``, and ``symllm count`` (or
    ``command``) of ``raw`` written as a config.json prints exactly that line on stderr, nothing on stdout,
    and exits 2."""
    import symllm
    from symllm.arch.config import from_hf
    with pytest.raises(symllm.SymllmError) as info:
        from_hf(raw)
    assert str(info.value).startswith(start) and "\n" not in str(info.value)
    path = folder / "config.json"
    path.write_text(json.dumps(raw))
    r = cli([command, str(path)])
    assert (r.code, r.out) == (2, "") and r.err == f"symllm: error: {info.value}\n"


@pytest.fixture
def within_a_minute():
    """Fails the test, rather than hanging the suite, if an in-process command runs for a minute (waits on a
    cache entry that is a FIFO, builds a model of 2**40 layers, never ends a report)."""
    import signal

    def hung(signum, frame):
        raise AssertionError("the command hung for 60 s")
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="session")
def published() -> dict[str, dict]:
    """Published parameter totals: preset name -> {"total": int, "source": str} (see PUBLISHED)."""
    return PUBLISHED


@dataclass(frozen=True)
class CliResult:
    """What one ``symllm.cli.main(argv)`` call did: its exit status and everything it printed."""
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys):
    """Run the command line in-process: ``cli(["count", "llama3.1-8b"])`` returns a CliResult.

    Output printed before the call is discarded, so each result holds that call's output alone; an
    argparse exit (``--help``, a bad choice) is returned as its status rather than raised. Draining
    capsys around each call also makes the fixture safe to reuse across Hypothesis examples. Every call checks
    that no line on stderr (an error, a warning, a summary) is over 100 columns, so each test of an error line
    checks its width too."""
    from symllm.cli import main
    from symllm.validate import WIDTH

    def run(argv) -> CliResult:
        capsys.readouterr()
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:
            code = exc.code
        out, err = capsys.readouterr()
        if code is None:
            code = 0
        long = [line for line in err.splitlines() if len(line) > WIDTH]
        assert not long, f"stderr lines over {WIDTH} columns (symllm.validate.WIDTH): {long}"
        return CliResult(code, out, err)
    return run


@pytest.fixture(scope="session")
def torch() -> ModuleType:
    """The torch module (see requires: skipped when missing, a failure under CI=true)."""
    return requires("torch")


@pytest.fixture(scope="session")
def reference(torch) -> ModuleType:
    """symllm.reference, the independent torch model the closed forms are checked against."""
    from symllm import reference
    return reference


@pytest.fixture(scope="session")
def meta_model(torch, reference):
    """``meta_model(name, dtype="float32")``: the reference model of a preset on the meta device, built once
    per test process (a 405B build takes seconds, and several tests measure the same presets). Shared:
    measure it (numel, FlopCounterMode, a backward pass), never change it."""
    @functools.lru_cache(maxsize=None)
    def build(name: str, dtype: str = "float32"):
        import symllm
        return reference.build(symllm.load(name), device="meta", dtype=getattr(torch, dtype))
    return build


def numel_by_layers(reference, cfg) -> dict:
    """torch's numel per breakdown key (``reference.count``) of ``cfg``'s reference model at its full depth,
    from builds of a few layers: pure arithmetic on torch's own counts, so as independent of symllm as a full
    build (a DeepSeek or Kimi build of 60 MoE layers took 10-20 s; this takes a tenth).

    Why it is exact: the reference builds every layer of one kind (``cfg.layer_kinds()``, the same list its
    full build reads) alike (``reference.TransformerBlock`` reads a layer's index only to look up its kind),
    and ``count`` sums over layers, so each key is ``outside + Σ_k n_k · per_layer_k``. Built: one layer of
    each kind (the model's mix, so a dense layer of an MoE model keeps its own width) and, for each kind
    with more than one layer, the same with one more of it; the difference is that kind's layer.
    ``tests/test_hypothesis.py`` checks the result equal to a full build's count on small models of
    several kinds."""
    from collections import Counter
    from symllm.arch.layers import runs
    kinds = cfg.layer_kinds()
    count, order = Counter(kinds), list(dict.fromkeys(kinds))

    def measure(layers: list) -> dict:
        small = cfg.replace(n_layers=len(layers), layers=runs(layers))
        return reference.count(reference.build(small, device="meta"))

    one_each = measure(order)
    out = dict(one_each)
    for i, kind in enumerate(order):
        if count[kind] > 1:
            more = measure(order[:i + 1] + [kind] + order[i + 1:])
            for key in more:
                out[key] = out.get(key, 0) + (count[kind] - 1) * (more[key] - one_each.get(key, 0))
    return out


@pytest.fixture(scope="session")
def preset_numel(reference):
    """``preset_numel(name)``: the reference model's numel per symllm breakdown key (and "total") for a
    preset at its full depth (:func:`numel_by_layers`), counted once per test process."""
    import symllm
    return functools.lru_cache(maxsize=None)(lambda name: numel_by_layers(reference, symllm.load(name)))


def saved_during(forward, model) -> int:
    """Bytes of the distinct storages autograd saves for backward while ``forward()`` runs (each storage
    once), ``model``'s parameters excluded: torch's own count of a forward's saved activations."""
    torch = requires("torch")
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        forward()
    return sum(seen.values())


def held_for_backward(module, x) -> int:
    """Bytes of the distinct storages that ``module(x)``'s autograd graph holds for backward once the forward
    has returned (saved_tensors_hooks, each storage once, parameters left out). A storage saved by a node
    that the forward then drops is not held: the Gated DeltaNet's torch path computes the last chunk's state
    update and discards it (no final state asked for), so what that node alone saved is freed before any
    backward (tests/test_linear_attention.py, tests/test_mamba.py)."""
    import gc
    import weakref
    torch = requires("torch")
    params = {p.untyped_storage().data_ptr() for p in module.parameters()}
    packed = []

    def pack(t):
        if t.untyped_storage().data_ptr() not in params:
            packed.append(weakref.ref(t))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = module(x)
    gc.collect()
    held = {}
    for ref in packed:
        t = ref()
        if t is not None:
            held[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
    del out
    return sum(held.values())


def live_peak(module, x) -> int:
    """The most bytes of storages created by ``module(x)`` live at once (CPU, inference, no grad): a
    TorchDispatchMode adds each op's new output storage and a weak reference takes it off when torch frees
    it; the parameters and ``x`` (the normed input) are not counted."""
    import weakref
    torch = requires("torch")
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
    old = {t.untyped_storage().data_ptr() for t in (*module.parameters(), x)}

    class Live(TorchDispatchMode):
        now = peak = 0
        refs: dict = {}

        def _free(self, key, n):
            self.now -= n
            self.refs.pop(key, None)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor):
                    st = t.untyped_storage()
                    key, n = st.data_ptr(), st.nbytes()
                    if key in self.refs or key in old or n == 0:
                        continue  # a view, an in-place result, or a tensor from before
                    self.now += n
                    self.refs[key] = weakref.ref(st, lambda _, k=key, n=n: self._free(k, n))
                    self.peak = max(self.peak, self.now)
            return out

    with torch.no_grad(), Live() as live:
        module(x)
    return live.peak


def saved_and_eager(model, raw: dict, batch: int, seq: int) -> tuple[int, int]:
    """``(torch's, symllm's)`` saved activation bytes of a training forward in fp32 over ``batch`` random
    sequences of ``seq`` tokens: what ``model`` (transformers' class built from the config.json ``raw``)
    saves (:func:`saved_during`), and symllm's eager stack for ``raw`` (the closed form count composes)."""
    torch = requires("torch")
    import symllm
    from symllm.arch.config import from_hf
    from symllm.costs import phases
    ids = torch.randint(0, raw["vocab_size"], (batch, seq))
    measured = saved_during(lambda: model(input_ids=ids), model)
    cfg = from_hf(raw)
    ours = phases.memory(symllm.model_for(cfg), "activations", stack="eager").subs(
        symllm.values(cfg, batch=batch, seq=seq, dtype="fp32"))
    return measured, ours


def engine_peak(model: str, batch: int, options: dict, serving: dict, gpu: str = "h100-sxm"):
    """A replica's per-GPU peak as its engine holds ``batch`` sequences: count's weights and KV cache of the batch's
    s + n tokens, beside the larger of count's decode step's working set (one token a sequence at context s + n:
    its peak less its weights and cache) and count --serve's activation peak (the profiled prefill), plus count
    --serve's non-torch memory, in whole bytes (rounded up). ``serving``: count --serve --json's section (its
    fractions printed "p/q")."""
    import math
    from fractions import Fraction

    import symllm

    def _number(value):
        return Fraction(value) if isinstance(value, str) else value

    m = symllm.workload(model, gpu=gpu, batch=batch, **options)["memory_per_gpu"]
    step = {**options, "seq": 1, "gen": 0, "context": options["seq"] + options.get("gen", 0)}
    at = symllm.workload(model, gpu=gpu, batch=batch, **step)["memory_per_gpu"]
    working = at["inference_peak"] - at["weights"] - at["kv_cache"] - at.get("state_cache", 0)
    return math.ceil(m["weights"] + m["kv_cache"] + m.get("state_cache", 0)  # whole bytes
                     + max(working, _number(serving["activation_peak"])) + _number(serving["non_torch"]))
