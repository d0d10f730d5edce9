"""The official ``kubernetes`` Python client against the API server, as its users call it.

The client sends a create or update without a ``Content-Type`` header (its
``json.dumps`` body goes out as is): kube-apiserver reads such a body as JSON.
An object no manager owns a field of has no ``managedFields`` at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio.to_thread
import kubernetes
from kubernetes.client.rest import ApiException

from reconcilekit.testing import Cluster

T = TypeVar("T")


async def _official(apiserver: Cluster) -> kubernetes.client.ApiClient:
    """An official client for the same server, user and CA as the fixture's."""
    ours = apiserver.configuration
    cfg = kubernetes.client.Configuration(host=ours.host)
    cfg.ssl_ca_cert, cfg.cert_file, cfg.key_file = ours.ssl_ca_cert, ours.cert_file, ours.key_file
    cfg.verify_ssl = ours.verify_ssl  # False for a kubeconfig with insecure-skip-tls-verify
    token = await ours.get_api_key_with_prefix("BearerToken")
    if token:
        cfg.api_key = {"BearerToken": token}
    return kubernetes.client.ApiClient(cfg)


async def _call(call: Callable[[], T]) -> T:
    return await anyio.to_thread.run_sync(call)  # a blocking client: off the event loop


async def test_creates_and_updates_without_a_content_type(apiserver: Cluster) -> None:
    api = await _official(apiserver)
    try:
        core, ns = kubernetes.client.CoreV1Api(api), apiserver.namespace
        made = await _call(lambda: core.create_namespaced_config_map(
            ns, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
                 "data": {"k": "v"}}))
        assert made.data == {"k": "v"}
        assert [e.manager for e in made.metadata.managed_fields] == ["OpenAPI-Generator"]
        made.data["k"] = "w"
        replaced = await _call(lambda: core.replace_namespaced_config_map("a", ns, made))
        assert replaced.data == {"k": "w"}
        patched = await _call(lambda: core.patch_namespaced_config_map(
            "a", ns, {"data": {"m": "n"}}))
        assert patched.data == {"k": "w", "m": "n"}
        bare = await _call(lambda: core.create_namespaced_config_map(
            ns, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bare"}}))
        assert bare.metadata.managed_fields is None
        raw = await apiserver.request("GET", f"/api/v1/namespaces/{ns}/configmaps/bare")
        assert "managedFields" not in raw.body["metadata"]
        await _call(lambda: core.delete_namespaced_config_map("a", ns))
        try:
            await _call(lambda: core.read_namespaced_config_map("a", ns))
        except ApiException as err:
            assert err.status == 404
        else:
            raise AssertionError("the ConfigMap is still there")
    finally:
        await _call(api.close)
        api.rest_client.pool_manager.clear()  # its keep-alive sockets, before the server stops
