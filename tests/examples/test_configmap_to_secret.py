"""A Secret follows its ConfigMap: made, remade when deleted, updated with it."""

import base64

import anyio

from examples.configmap_to_secret import build
from reconcilekit import Client, NotFound
from reconcilekit.kinds import CONFIG_MAPS, SECRETS
from reconcilekit.testing import Cluster, eventually


async def secret_data(client: Client, name: str, ns: str) -> dict[str, str] | None:
    """The Secret's data, decoded; None when there is no Secret."""
    try:
        got = await client.get(SECRETS, name, ns)
    except NotFound:
        return None
    return {k: base64.b64decode(v).decode() for k, v in got["data"].items()}


async def test_secret_follows_its_configmap(apiserver: Cluster) -> None:
    ns = apiserver.namespace
    async with Client(apiserver.configuration) as client:
        manager = build(client, namespace=ns, http_addr=None)
        async with anyio.create_task_group() as tg:
            await tg.start(manager.run)

            async def copied(data: dict[str, str]) -> bool:
                return await secret_data(client, "app", ns) == data

            cm = await client.create(CONFIG_MAPS, {
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "app"}, "data": {"color": "blue"}}, ns)
            await eventually(lambda: copied({"color": "blue"}), what="the Secret made")
            await client.delete(SECRETS, "app", ns)  # repaired through owns()
            await eventually(lambda: copied({"color": "blue"}), what="the Secret remade")
            cm["data"] = {"color": "red", "size": "L"}
            await client.update(CONFIG_MAPS, cm)
            await eventually(lambda: copied({"color": "red", "size": "L"}),
                             what="the Secret updated")
            manager.stop()
