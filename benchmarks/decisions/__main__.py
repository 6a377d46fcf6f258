"""`make decisions`: the error rates of the decisions the service takes on its own, on
years of the models' real daily errors (also part of `make replay`'s report).

    python -m benchmarks.decisions
"""

from __future__ import annotations

from benchmarks.decisions import health, promotion


def main() -> None:
    print("## The shadow judge\n")
    promotion.main()
    print("\n## Model health on held-out years\n")
    health.main([])


if __name__ == "__main__":
    main()
