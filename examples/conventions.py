"""Named FLOP conventions against symllm's exact count, symbolically and on presets.
Run: python examples/conventions.py [PRESET ...]"""
import sys

import sympy as sp

from symllm.costs import scaling as sc
from symllm.arch.symbols import f


def main(presets):
    for name in [*sorted(sc.CONVENTIONS), "symllm"]:
        print(f"{name:15} {sc.convention(name).source}")
    print()
    for name in sorted(sc.CONVENTIONS):
        c = sc.compare(name, "symllm", configs=presets, seq=4096)
        print(f"{name} - symllm (training FLOPs per token, f = 1): {sp.factor(c['difference'].subs(f, 1))}")
        for preset in presets:
            print(f"    {preset:14} {c[preset]['first']:>16,.0f} vs {c[preset]['second']:>16,.0f} "
                  f"({c[preset]['relative']:+.1%})")
    k = sc.compare("kaplan2020", "symllm", quantity="params", configs=presets)
    print("\nKaplan's N = 12 L d^2 against the exact parameter count:")
    for preset in presets:
        print(f"    {preset:14} {k[preset]['first']:>16,} vs {k[preset]['second']:>16,} ({k[preset]['relative']:+.1%})")


if __name__ == "__main__":
    main(sys.argv[1:] or ["llama3.2-1b", "llama3.1-8b", "llama2-70b"])
