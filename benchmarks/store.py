"""Store: memory per cached Pod, cached get latency, by_index at 1k vs 100k objects.

Run: ``python -m benchmarks.store``. Numbers go in docs/performance.md.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from reconcilekit import ObjectKey
from reconcilekit.lowlevel import Store


def realistic_pod(i: int) -> dict[str, Any]:
    """A Pod of about 3 KB of JSON, shaped like one a kubelet reports on."""
    name = f"cn-{i:06d}"
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": f"ns-{i % 20}",
            "uid": f"{i:08d}-1111-2222-3333-444455556666",
            "resourceVersion": str(100000 + i), "generation": 1,
            "creationTimestamp": "2026-11-22T01:00:00Z",
            "labels": {"app": "cn", "pool.matrixorigin.io/pool-name": f"pool-{i % 7}",
                       "pool.matrixorigin.io/pod-phase": "Idle",
                       "pod-template-hash": "5d8f7b9c6d"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-20T10:00:00Z"},
            "ownerReferences": [{"apiVersion": "core.matrixorigin.io/v1alpha1",
                                 "kind": "CNPool", "name": f"pool-{i % 7}",
                                 "uid": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
                                 "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {
            "containers": [{
                "name": "main", "image": "matrixorigin/matrixone:2.0.1",
                "args": ["-cfg", "/etc/matrixone/config.toml", "-max-processor", "8"],
                "env": [{"name": f"ENV_{k}", "value": f"value-{k}-{i}"} for k in range(6)],
                "ports": [{"containerPort": 6001, "name": "service", "protocol": "TCP"}],
                "resources": {"limits": {"cpu": "8", "memory": "32Gi"},
                              "requests": {"cpu": "4", "memory": "16Gi"}},
                "volumeMounts": [{"mountPath": "/etc/matrixone", "name": "config"},
                                 {"mountPath": "/var/lib/matrixone", "name": "data"}],
                "readinessProbe": {"tcpSocket": {"port": 6001}, "periodSeconds": 5},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent",
            }],
            "volumes": [{"name": "config", "configMap": {"name": "cn-config"}},
                        {"name": "data", "emptyDir": {}}],
            "nodeName": f"node-{i % 50:03d}", "restartPolicy": "Always",
            "schedulerName": "default-scheduler", "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}],
        },
        "status": {
            "phase": "Running", "podIP": f"10.0.{i // 250 % 250}.{i % 250}",
            "hostIP": f"192.168.1.{i % 50}", "startTime": "2026-11-22T01:00:05Z",
            "qosClass": "Burstable",
            "conditions": [{"type": t, "status": "True",
                            "lastTransitionTime": "2026-11-22T01:00:10Z"}
                           for t in ("Initialized", "Ready", "ContainersReady",
                                     "PodScheduled")],
            "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0,
                                   "image": "matrixorigin/matrixone:2.0.1",
                                   "imageID": "docker-pullable://matrixorigin/matrixone@sha256:"
                                              + "0123456789abcdef" * 4,
                                   "containerID": "containerd://" + "fedcba9876543210" * 4,
                                   "started": True,
                                   "state": {"running": {"startedAt": "2026-11-22T01:00:08Z"}}}],
        },
    }


def _by_pool(obj: Mapping[str, Any]) -> Iterable[str]:
    return [obj["metadata"]["labels"]["pool.matrixorigin.io/pool-name"]]


def _memory_per_object(n: int) -> tuple[float, float, float]:
    pods = [orjson.dumps(realistic_pod(i)) for i in range(n)]
    json_size = sum(len(p) for p in pods) / n
    objs = [orjson.loads(raw) for raw in pods]
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    store = Store({"pool": _by_pool})
    for obj in objs:
        store.put(obj)  # encodes its own compact bytes, counted here
    store_cost = (tracemalloc.get_traced_memory()[0] - before) / n
    tracemalloc.stop()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    as_dicts = {i: orjson.loads(raw) for i, raw in enumerate(pods)}
    dict_cost = (tracemalloc.get_traced_memory()[0] - before) / n
    tracemalloc.stop()
    del as_dicts, store, objs
    return json_size, store_cost, dict_cost


def _store_of(n: int) -> Store:
    store = Store({"pool": _by_pool})
    for i in range(n):
        pod = realistic_pod(i)
        pod["metadata"]["labels"]["pool.matrixorigin.io/pool-name"] = f"pool-{i}"
        store.put(pod)
    return store


def _timed(fn: Any, rounds: int) -> float:
    started = time.perf_counter()
    for _ in range(rounds):
        fn()
    return (time.perf_counter() - started) / rounds * 1e6


def main() -> None:
    json_size, store_cost, dict_cost = _memory_per_object(10_000)
    small, large = _store_of(1_000), _store_of(100_000)
    get_us = _timed(lambda: small.get(ObjectKey("ns-3", "cn-000003")), 20_000)
    by_small = _timed(lambda: small.by_index("pool", "pool-500"), 20_000)
    by_large = _timed(lambda: large.by_index("pool", "pool-50000"), 20_000)
    print("| measurement | value |")
    print("|---|---|")
    print(f"| Pod JSON size (average of 10,000) | {json_size:,.0f} B |")
    print(f"| cached in Store (JSON bytes + indexes) | {store_cost:,.0f} B "
          f"({store_cost / json_size:.2f}x JSON) |")
    print(f"| held as plain dicts | {dict_cost:,.0f} B ({dict_cost / json_size:.2f}x JSON) |")
    print(f"| Store.get (decodes a fresh copy) | {get_us:.1f} µs |")
    print(f"| by_index at 1,000 objects | {by_small:.1f} µs |")
    print(f"| by_index at 100,000 objects | {by_large:.1f} µs "
          f"({by_large / by_small:.2f}x the 1,000 case) |")


if __name__ == "__main__":
    main()
