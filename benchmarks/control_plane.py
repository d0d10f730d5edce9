"""Start to ready of a real control plane: etcd, kube-apiserver, kube-controller-manager.

``python -m benchmarks.control_plane [--assets DIR] [--runs N]`` starts a
:class:`reconcilekit.testing.ControlPlane` N times (default 3) from the
binaries in DIR (default: ``RECONCILEKIT_TEST_ASSETS`` or ``KUBEBUILDER_ASSETS``)
and reports start to ready (``/readyz`` 200 and the ``default``
ServiceAccount made) and stop, with and without kube-controller-manager.
Without assets it prints a table saying so and exits 0.
"""

from __future__ import annotations

import argparse
import statistics
import time

from reconcilekit.testing import ControlPlane
from reconcilekit.testing._control_plane import assets_from_env


def _measure(assets: str, runs: int, controller_manager: bool) -> tuple[list[float], list[float]]:
    starts, stops = [], []
    for _ in range(runs):
        plane = ControlPlane(assets, controller_manager=controller_manager)
        plane.start()
        assert plane.startup_seconds is not None
        starts.append(plane.startup_seconds)
        began = time.perf_counter()
        plane.stop()
        stops.append(time.perf_counter() - began)
    return starts, stops


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.control_plane")
    parser.add_argument("--assets", metavar="DIR", default=None)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    assets = args.assets or assets_from_env()
    print("| control plane | start to ready (median) | range | stop (median) |")
    print("|---|---:|---:|---:|")
    if assets is None:
        print("| not run: no assets (--assets or RECONCILEKIT_TEST_ASSETS) | - | - | - |")
        return
    for label, kcm in (("etcd + kube-apiserver + kube-controller-manager", True),
                       ("etcd + kube-apiserver", False)):
        starts, stops = _measure(str(assets), args.runs, kcm)
        print(f"| {label} | {statistics.median(starts):.2f} s | "
              f"{min(starts):.2f}-{max(starts):.2f} s | {statistics.median(stops):.2f} s |")


if __name__ == "__main__":
    main()
