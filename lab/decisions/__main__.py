"""`make -C lab decisions`: the error rates of the decisions the service takes on its own, on
years of the models' real daily errors (also part of `make -C lab replay`'s report).

    python -m lab.decisions
"""

from __future__ import annotations

from lab.decisions import health_alarms, promotion_errors


def main() -> None:
    print("## The shadow judge\n")
    promotion_errors.main()
    print("\n## Model health on held-out years\n")
    health_alarms.main([])


if __name__ == "__main__":
    main()
