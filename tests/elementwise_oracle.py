"""An element-wise FLOP count independent of symllm: torch's own dispatcher, watched while transformers'
model classes run.

:class:`ElementwiseCount` is a ``TorchDispatchMode``: every aten op a forward pass dispatches passes through
it, and it adds up, per op, the element-wise FLOPs of that op's output (or, for a reduction, of its input)
under one written convention, :data:`WEIGHTS`. It reads nothing of symllm (no LayerKind, no component, no
ELEMENTWISE table): what it counts is what transformers computes, so a term symllm gives a layer that the
layer never computes (or leaves out) shows as a difference.

The convention (docs/conventions.md: the `elementwise` bucket of "FLOPs and memory"), stated here in aten terms:

- an arithmetic op (``add``, ``sub``, ``mul``, ``div``, ``pow`` by 2, ``rsqrt``, ``exp``, ``tanh``, ...) is
  1 FLOP per output element; a complex ``mul`` (Llama 4's RoPE) 6 per complex element (4 multiplies, 2 adds);
- a reduction (``mean``, ``sum``) is 1 per *input* element (the accumulation);
- a fused activation is what it computes per element: ``silu`` and ``sigmoid`` 4 (negate, exp, add, divide),
  ``gelu`` with ``approximate="tanh"`` 9 (x³: 2, ×0.044715, +x, ×√(2/π), tanh, +1, ×x, ×0.5), the exact ``gelu``
  5 (÷√2, erf, +1, ×x, ×0.5), ``_softmax``
  4 per score (subtract the max, exp, accumulate, divide; a scale before it is its own ``mul``);
- ``softplus`` 3 (exp, add, log; the Gated DeltaNet's decay); ``cumsum`` 1 per element (one add each);
- a clamp 1 per bound per element (gpt-oss's up projection clamped on both sides: 2); a ``relu`` 1;
- ``native_layer_norm`` (``nn.LayerNorm``) 5 per element (the mean, subtract it, square, accumulate, scale by
  1/std; the per-row rsqrt dropped, as RMSNorm's), and 1 each for its weight's multiply and its bias's add;
- a linear's fused bias (``addmm``) 1 per output element;
- ``index_add`` (the routed experts' outputs summed into their tokens' rows) 1 per added element;
- a convolution is a matmul (FlopCounterMode's bucket, as ``mm``); a triangular solve
  (``linalg_solve_triangular``, the chunked delta rule's) is in neither bucket (docs/conventions.md, "Linear
  attention"): not counted here;
- copies and selections are no arithmetic: ``cat``, ``stack``, ``clone``, padding, casts, views, ``where``,
  ``topk``, ``scatter``, ``gather``, indexing; nor is an op whose output is not floating point (positions,
  masks, indices).

Three rules say which tensors' arithmetic counts, from where each tensor comes (tracked op by op, each
output tagged from its inputs):

- **activations** (anything computed from the token ids) and **weights** (parameters, and what is computed
  from them alone: Gemma's ``1 + weight``) count;
- **constants** (what is computed from neither: positions, RoPE's cos/sin tables, Llama 4's per-position
  temperature factor, the causal mask) do not: a table is built once per forward whatever the batch, and
  symllm's convention counts per token. Adding such a tensor to the activations inside an attention module
  is the attention mask, which a fused kernel applies by skipping the masked pairs: 0 (but in the classes of
  :data:`POSITION_BIASES`, whose constant so added is a bias: MPT's ALiBi, 1 an element; every other op of a
  constant with an activation counts: Llama 4 multiplies its queries by the temperature, and that multiply
  is 1);
- **per-row statistics** (the output of a reduction that keeps its dimension, or reduces everything, and what
  is computed from such outputs and constants alone: RMSNorm's ``+ eps`` and ``rsqrt`` of each row's mean
  square) do not: symllm's convention drops per-row work ("per-row rsqrt dropped"), counting per element of
  the tensor that is normalised. A reduction that drops its dimension (``keepdim`` false) is a weighted sum of
  activations and gives activations: DeepSeek-V4's collapse of its residual streams into a block's input, its
  compressors' pooling of a window into one entry.

An op that computes on activations or weights and is in none of these lists raises: nothing unknown is
counted as zero. Each op is also attributed to the class of the innermost module running it
(:attr:`ElementwiseCount.by_module`), so a test can say where a count differs and why.
"""
from __future__ import annotations

from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode

#: FLOPs per output element of the arithmetic ops (aten overload packet names; the in-place ``op_`` too)
WEIGHTS = {
    "add": 1, "sub": 1, "rsub": 1, "mul": 1, "div": 1, "pow": 1, "rsqrt": 1, "sqrt": 1, "reciprocal": 1,
    "exp": 1, "log": 1, "log1p": 1, "tanh": 1, "abs": 1, "floor": 1,
    "silu": 4, "sigmoid": 4, "_softmax": 4,
    "relu": 1,  # max(x, 0), as clamp_min (DeepSeek Sparse Attention's indexer scores)
    "softplus": 3, "cumsum": 1,
    "addmm": 1,  # nn.Linear with a bias: the bias add (the matmul is FlopCounterMode's)
    "index_add": 1,  # per element of the source rows added in
    # the only neg of these models is rotate_half's sign flip, which the 2×2 rotation's subtract absorbs
    # (RoPE: 2 multiplies and 1 add per rotated element): 0
    "neg": 0,
}
#: reductions: FLOPs per input element (a maximum is comparisons, no arithmetic); their output is a statistic
REDUCTIONS = {"mean": 1, "sum": 1, "max": 0, "amax": 0}
#: no arithmetic: copies, views, selections, casts, creation
FREE = {
    "cat", "stack", "clone", "copy", "copy_", "_to_copy", "to", "contiguous", "alias", "view", "_unsafe_view",
    "reshape", "expand", "unsqueeze", "squeeze", "transpose", "permute", "t", "slice", "select", "split",
    "split_with_sizes", "chunk", "unbind", "narrow", "index", "index_select", "gather", "scatter", "where",
    "masked_fill", "topk", "sort", "argsort", "argmax", "embedding", "detach", "lift_fresh",
    "view_as_complex", "view_as_real", "_reshape_alias", "as_strided", "new_zeros", "new_empty", "zeros_like",
    "empty_like", "ones_like", "full_like", "fill", "fill_", "zero_", "_local_scalar_dense", "repeat",
    "repeat_interleave", "flatten", "unflatten", "diagonal", "tril", "triu", "nonzero", "bitwise_and",
    "bitwise_or", "bitwise_not", "logical_and", "logical_or", "logical_not", "eq", "ne", "lt", "le", "gt", "ge",
    "one_hot", "_unsafe_index", "index_put", "index_put_", "empty", "zeros", "ones", "full", "arange",
    "scalar_tensor", "_assert_tensor_metadata", "set_", "resize_", "new_ones", "new_full", "any", "all",
    "constant_pad_nd",
}
#: matmuls: FlopCounterMode's bucket, not this one
MATMULS = {"mm", "bmm", "matmul", "linear", "einsum", "baddbmm", "_grouped_mm", "addbmm", "dot", "convolution"}
#: in neither bucket (the module docstring)
UNCOUNTED = {"linalg_solve_triangular"}

#: attention classes whose one add of a constant to the scores is a position bias, not the mask -> what it is
POSITION_BIASES = {"MptAttention": "ALiBi's bias (MptAttention applies its mask with masked_fill, no add)"}

ACT, PARAM, STAT, CONST = "activation", "weight", "statistic", "constant"
_RANK = {ACT: 3, STAT: 2, PARAM: 1, CONST: 0}
_TAG = "_elementwise_oracle"


def _tag(t) -> str:
    return getattr(t, _TAG, CONST)


def _ancestors(path: str):
    """``path`` and the paths of the modules holding it, up to the model (``""``)."""
    parts = path.split(".") if path else []
    return [".".join(parts[:i]) for i in range(len(parts), -1, -1)]


def _keeps_rows(args, kwargs) -> bool:
    """Whether a reduction's output is a per-row statistic: it keeps the reduced dimension (``keepdim``, to be
    broadcast back over its row: RMSNorm's mean square, a softmax's max, a normaliser's sum) or reduces
    everything. A reduction that drops a dimension is a weighted sum of activations, itself an activation
    (DeepSeek-V4's collapse of its residual streams, its compressors' pooling over a window)."""
    dims = args[1] if len(args) > 1 else kwargs.get("dim")
    keep = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
    return bool(keep) or dims is None or (isinstance(dims, (list, tuple)) and not dims)


def _tensors(tree):
    if isinstance(tree, torch.Tensor):
        yield tree
    elif isinstance(tree, (list, tuple)):
        for item in tree:
            yield from _tensors(item)


class ElementwiseCount(TorchDispatchMode):
    """Count the element-wise FLOPs of what runs inside it (see the module docstring).

    ``model``: its parameters are the weights; ``inputs``: tensors that are activations (the token ids).
    After the ``with`` block, :attr:`total` is the count, :attr:`by_op` and :attr:`by_module` split it.
    """

    def __init__(self, model: torch.nn.Module, *inputs: torch.Tensor):
        super().__init__()
        for p in model.parameters():
            setattr(p, _TAG, PARAM)
        for x in inputs:
            setattr(x, _TAG, ACT)
        self.model = model
        self.by_op: Counter = Counter()
        self.by_module: Counter = Counter()  # the class of the innermost module running the op -> FLOPs
        self.by_site: Counter = Counter()  # (module path, op) -> FLOPs
        #: (module path, op) -> FLOPs of the ops of an activation with a per-row statistic (x - max(x), x * rsqrt)
        self.with_statistic: Counter = Counter()
        self.classes: dict[str, str] = {}  # module path -> its class name
        self._stack: list[str] = []
        self._hooks = []

    def __enter__(self):
        for path, module in self.model.named_modules():
            self.classes[path] = type(module).__name__
            self._hooks.append(module.register_forward_pre_hook(lambda m, a, n=path: self._enter(n)))
            self._hooks.append(module.register_forward_hook(lambda m, a, o: self._leave()))
        return super().__enter__()

    def __exit__(self, *exc):
        for hook in self._hooks:
            hook.remove()
        return super().__exit__(*exc)

    def _enter(self, path: str) -> None:  # a hook returning None leaves the module's input and output alone
        self._stack.append(path)

    def _leave(self) -> None:
        self._stack.pop()

    @property
    def total(self) -> int:
        return sum(self.by_op.values())

    def within(self, *classes: str, ops=None, statistic: bool = False, direct: bool = False) -> int:
        """FLOPs of the ops run inside a module of one of ``classes`` (at any depth: an expert's activation
        module too; ``direct``: by that module's own code only), of ``ops`` only when given; ``statistic``: only
        the ops of an activation with a per-row statistic."""
        sites = self.with_statistic if statistic else self.by_site
        inside = lambda path: any(self.classes[p] in classes  # noqa: E731
                                  for p in (_ancestors(path)[:1] if direct else _ancestors(path)))
        return sum(v for (path, op), v in sites.items() if inside(path) and (ops is None or op in ops))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        base = name[:-1] if name.endswith("_") and not name.endswith("__") else name  # in place: the op's count
        inputs = list(_tensors(args)) + list(_tensors(list(kwargs.values())))
        tags = [_tag(t) for t in inputs]
        tag = max(tags, key=_RANK.__getitem__, default=CONST)
        outs = list(_tensors(out))
        floating = [o for o in outs if o.is_floating_point() or o.is_complex()]
        if base in REDUCTIONS and tag in (ACT, PARAM) and _keeps_rows(args, kwargs):
            tag_out = STAT
        else:
            tag_out = tag
        for o in outs:
            try:
                setattr(o, _TAG, tag_out)
            except (AttributeError, RuntimeError):  # pragma: no cover - a tensor that takes no attribute
                pass
        if (not floating or tag in (CONST, STAT) or base in FREE or base in MATMULS or base in UNCOUNTED
                or not REDUCTIONS.get(base, 1)):
            return out
        flops = self._flops(func, base, args, kwargs, inputs, tags, floating[0])
        if flops:
            self.by_op[base] += flops
            module = self._stack[-1] if self._stack else ""
            self.by_module[self.classes[module]] += flops
            self.by_site[module, base] += flops
            if STAT in tags:
                self.with_statistic[module, base] += flops
        return out

    def _flops(self, func, base, args, kwargs, inputs, tags, out) -> int:
        elements = out.numel()
        module = self.classes[self._stack[-1] if self._stack else ""]
        if (base in ("add", "sub") and any(t == CONST and x.dim() > 0 for t, x in zip(tags, inputs))
                and "Attention" in module and module not in POSITION_BIASES):
            return 0  # the attention mask (a constant tensor added to the scores): a fused kernel skips, not adds
        if base in REDUCTIONS:
            return REDUCTIONS[base] * inputs[0].numel()
        if base == "mul" and out.is_complex():
            return 6 * elements  # (a + bi)(c + di): 4 multiplies, 2 adds
        if base == "pow":
            exponent = args[1] if len(args) > 1 else kwargs.get("exponent")
            if exponent != 2:
                raise AssertionError(f"element-wise oracle: pow by {exponent!r} has no weight in the convention")
            return elements
        if base == "gelu":  # tanh: 9; the exact GELU 0.5·x·(1 + erf(x / √2)): ÷√2, erf, +1, ×x, ×0.5 (5)
            return (9 if kwargs.get("approximate", "none") == "tanh" else 5) * elements
        if base in ("clamp", "clamp_"):
            bounds = [b for b in (list(args[1:3]) + [kwargs.get("min"), kwargs.get("max")]) if b is not None]
            return len(bounds) * elements
        if base in ("clamp_min", "clamp_max", "minimum", "maximum"):
            return elements
        if base == "native_layer_norm":  # nn.LayerNorm: mean, subtract, square, accumulate, scale by 1/std (5);
            weight, bias = (list(args) + [None] * 4)[2:4]  # its weight's multiply and its bias's add, 1 each
            return (5 + (weight is not None) + (bias is not None)) * elements
        if base == "index_add":
            source = args[3] if len(args) > 3 else kwargs["source"]
            return source.numel()
        if base in WEIGHTS:
            return WEIGHTS[base] * elements
        raise AssertionError(f"element-wise oracle: {func} on {', '.join(tags)} has no weight in the convention")


def count(model: torch.nn.Module, input_ids: torch.Tensor, **forward) -> ElementwiseCount:
    """Run ``model(input_ids, **forward)`` without gradients under :class:`ElementwiseCount`; return it."""
    with torch.no_grad(), ElementwiseCount(model, input_ids) as counter:
        model(input_ids, **forward)
    return counter

