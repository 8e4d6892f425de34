"""LoRA's target linears by name: PEFT's (``q_proj``, ``v_proj``, ...) or symllm's own (``wq``, ``wv``, ...), read
into symllm's names in model order (``Workload.lora_targets``), without building a component where the names were
read before (a count with ``--lora-targets`` imports no SymPy)."""
from __future__ import annotations

from symllm.errors import SymllmError
from symllm.validate import short, with_list

__all__ = ["DEFAULT_LORA_TARGETS", "lora_targets"]


#: PEFT's default LoRA targets for Llama (q_proj, v_proj), as symllm names in model order (in a model with
#: neither, the fused linear holding them: symllm.costs.finetune.adapt)
DEFAULT_LORA_TARGETS = "wq,wv"


def lora_targets(value) -> str:
    """LoRA targets as symllm names, in model order, from a comma list of symllm or HF names: the names
    the linears declare (:func:`symllm.arch.components.lora_names`, read on first use: the default needs
    no component built, so ``symllm count`` does not import SymPy for it).

    >>> lora_targets("v_proj, q_proj"), lora_targets("wo,o_proj")
    ('wq,wv', 'wo')
    >>> lora_targets("qkv")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: lora_targets: unknown 'qkv' (known: qkv_proj; all ...: see docs/finetuning.md)
    """
    if value == DEFAULT_LORA_TARGETS:  # already in symllm's names and order (tests/test_rules.py checks it)
        return value
    if not isinstance(value, str) or not value.strip():
        raise SymllmError(f"lora_targets: expected a comma list of linear names, got {value!r}")
    known = _lora_vocabulary()
    names = set()
    for name in (x.strip() for x in value.split(",")):
        if name not in known:  # PEFT's names first: what a user of PEFT writes (symllm's wq, w1... too)
            hf = [k for k, v in known.items() if k != v]
            raise SymllmError(with_list(f"lora_targets: unknown {short(name, 20)} (known: ", hf,
                                        see="docs/finetuning.md", near=name))
        names.add(known[name])
    return ",".join(x for x in dict.fromkeys(known.values()) if x in names)


def _lora_vocabulary() -> dict[str, str]:
    """:func:`symllm.arch.components.lora_names`, read back from the cache (:mod:`symllm.numbers.cache`, keyed by
    symllm's source like every entry) where an earlier process walked the components for it: a count with
    ``--lora-targets`` then imports no SymPy. The entry is data, names only: a pair that is not two
    identifiers, or a symllm name that is not a name itself, and the components are walked again.

    >>> _lora_vocabulary()["q_proj"], list(_lora_vocabulary())[:3]
    ('wq', ['wq', 'wk', 'wv'])
    """
    import json
    from symllm.numbers.cache import cache_get, cache_put, key
    entry = key("lora_names")
    hit = cache_get("lora", entry)
    if hit is not None and len(hit) == 1:
        try:
            pairs = json.loads(hit[0])
        except ValueError:
            pairs = None
        if isinstance(pairs, list) and pairs and all(
                isinstance(p, list) and len(p) == 2 and all(type(x) is str and x.isidentifier() for x in p)
                for p in pairs):
            known = dict(pairs)
            if all(known.get(ours) == ours for ours in known.values()):
                return known
    from symllm.arch.components import lora_names
    known = lora_names()
    cache_put("lora", entry, (json.dumps([list(p) for p in known.items()]),))
    return known
