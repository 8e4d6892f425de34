"""Inverse sizing: the width (or depth) a budget buys in a family, in closed form, and the nearest valid
configs with their exact counts.  Run: python examples/inverse_sizing.py"""
from symllm.costs import scaling as sc


def show(title, sizing):
    print(f"{title}\n  continuous root: {sizing.continuous:,.1f}")
    for cfg, count in sizing.candidates:
        print(f"  d={cfg.dim:<6} L={cfg.n_layers:<4} n_h={cfg.n_heads:<4} n_kv={cfg.n_kv_heads:<4} {count:>20,}")


def main():
    llama3 = sc.Family(aspect=128, head_dim=128, gqa=4, ffn_dim_multiplier=1.3, multiple_of=1024)
    show("8e9 parameters, Llama-3 family (d/L = 128):", sc.size_for(8e9, llama3))
    show("70e9 parameters, same family:", sc.size_for(70e9, llama3))
    show("24 GB of bf16 weights:", sc.size_for(24e9, llama3, quantity="weight_bytes", bytes_per_param=2))
    show("1e11 training FLOPs per token at seq 2048:", sc.size_for(1e11, llama3, quantity="training"))
    depth = sc.size_for(8e9, llama3, solve_for="depth", width=4096)
    print(f"depth for 8e9 parameters at d = 4096: L = {depth.closed_form}")
    show("", depth)
    fixed = sc.Family(aspect=None, n_layers=16, head_dim=64, gqa=4, ffn_dim_multiplier=1.5, tie_embeddings=True)
    width = sc.size_for(1.2e9, fixed)
    print(f"width for a budget at L = 16 (closed form): d = {width.closed_form}")
    show("", width)


if __name__ == "__main__":
    main()
