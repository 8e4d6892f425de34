"""Compute-optimal allocation: Chinchilla's closed form under C = 6ND, and the optimum when a token costs
a Llama-3-like family's exact training FLOPs.  Run: python examples/compute_optimal.py [BUDGET ...]"""
import sys

from symllm.costs import scaling as sc


def main(budgets):
    opt = sc.chinchilla_optimum()
    print(f"N_opt(C) = {opt['N']},  D_opt(C) = {opt['D']}")
    print(f"  G = {opt['G']},  a = {opt['a']},  b = {opt['b']}")
    fam = sc.Family(aspect=128, head_dim=128, gqa=4, ffn_dim_multiplier=1.3, multiple_of=1024, seq=8192)
    print(f"\n{'C':>9} | {'N (6ND)':>9} {'D (6ND)':>9} {'loss':>6} | {'d':>6} {'L':>5} {'N (exact F)':>11} "
          f"{'D (exact F)':>11} {'loss':>6}")
    for budget in budgets:
        six = sc.optimal_allocation(budget)
        ex = sc.compute_optimal_exact(budget, fam)
        print(f"{budget:9.3g} | {six['N']:9.3g} {six['D']:9.3g} {six['loss']:6.3f} | {ex['d']:6.0f} {ex['L']:5.1f} "
              f"{ex['N']:11.3g} {ex['D']:11.3g} {ex['loss']:6.3f}")


if __name__ == "__main__":
    main([float(a) for a in sys.argv[1:]] or [1e21, 1e22, 5.76e23, 1e24, 1e25])
