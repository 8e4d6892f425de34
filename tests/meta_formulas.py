"""Meta's formulas (FeedForward's d_ff rounding, the weight shapes its Transformer builds), run as plain
Python: an independent source of expected numbers.

Nothing here imports symllm's symbolic code.
"""


def meta_hidden_dim(dim, multiple_of, ffn_dim_multiplier=None):
    """FeedForward.__init__ in Meta's llama/model.py, verbatim arithmetic."""
    hidden_dim = 4 * dim
    hidden_dim = int(2 * hidden_dim / 3)
    if ffn_dim_multiplier is not None:
        hidden_dim = int(ffn_dim_multiplier * hidden_dim)
    return multiple_of * ((hidden_dim + multiple_of - 1) // multiple_of)


def llama_params(dim, n_layers, n_heads, vocab_size, hidden_dim, n_kv_heads=None, tied=False):
    """Sum of the weight shapes Meta's Transformer builds (no biases)."""
    n_kv_heads = n_kv_heads or n_heads
    head_dim = dim // n_heads
    attn = dim * n_heads * head_dim + 2 * dim * n_kv_heads * head_dim + n_heads * head_dim * dim
    ffn = 3 * dim * hidden_dim
    block = attn + ffn + 2 * dim
    return vocab_size * dim + n_layers * block + dim + (0 if tied else vocab_size * dim)
