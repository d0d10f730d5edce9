"""What ``reconcilekit.kinds`` costs: its import, its shapes' import, and nothing per object.

Run: ``python -m benchmarks.kinds [--runs 20]``. Numbers go in docs/performance.md.

Measured, each in fresh interpreters (median of ``--runs``, the variants taken in turn so
drift hits all alike): ``python -c "import reconcilekit"``, the same followed by
``import reconcilekit.kinds`` (the resources: a ``TypedResource`` per built-in resource)
and by ``from reconcilekit.kinds import Pod, Deployment`` (the shapes of two API
packages: ``TypedDict`` classes, built only when named).

At run time the shapes cost nothing: objects stay the plain dicts the API server sends,
and a ``TypedResource`` is looked up like a ``Resource`` (equal fields, equal hash). The
last rows time what changed on that path, in this process: a dict lookup keyed by a
``TypedResource`` and by a hand-written ``Resource`` (as the cache looks up its informer),
and by a frozen dataclass with the generated ``__hash__`` the field-based one replaced.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import timeit
from dataclasses import dataclass

VARIANTS = {
    "python -c pass": "pass",
    "import reconcilekit": "import reconcilekit",
    "+ import reconcilekit.kinds": "import reconcilekit, reconcilekit.kinds",
    "+ the Pod and Deployment shapes":
        "import reconcilekit\nfrom reconcilekit.kinds import Deployment, Pod",
}


def _wall(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - started


@dataclass(frozen=True, slots=True)
class _GeneratedHash:  # a Resource as it was: dataclass-generated __eq__ and __hash__
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True


def _lookups(number: int) -> dict[str, float]:
    from reconcilekit import Resource
    from reconcilekit.kinds import PODS

    by_hand = Resource("", "v1", "Pod", "pods")
    old = _GeneratedHash("", "v1", "Pod", "pods")
    table: dict[object, int] = {by_hand: 1, old: 2}
    out = {}
    for name, key in (("TypedResource key", PODS), ("Resource key", by_hand),
                      ("generated-hash dataclass key", old)):
        best = min(timeit.repeat(lambda k=key: table[k], number=number, repeat=5))
        out[name] = best / number * 1e9
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for run in range(args.runs):
        for name, code in VARIANTS.items():
            times[name].append(_wall(code))
        print(f"run {run + 1}/{args.runs}", file=sys.stderr)
    median = {name: statistics.median(t) * 1000 for name, t in times.items()}
    print("| fresh interpreter | median wall (ms) | over the line above (ms) |")
    print("|---|---:|---:|")
    previous = None
    for name, ms in median.items():
        delta = "" if previous is None or name == "import reconcilekit" else \
            f"{ms - previous:+.1f}"
        if name == "import reconcilekit":
            delta = f"{ms - median['python -c pass']:+.1f} (over `pass`)"
        print(f"| `{name}` | {ms:.1f} | {delta} |")
        previous = ms
    lookups = _lookups(1_000_000)
    base = lookups["Resource key"]
    print()
    print("| dict lookup (as the cache finds an informer) | ns per lookup | ratio to Resource |")
    print("|---|---:|---:|")
    for name, ns in lookups.items():
        print(f"| {name} | {ns:.0f} | {ns / base:.2f} |")


if __name__ == "__main__":
    main()
