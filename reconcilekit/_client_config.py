"""Where a :class:`reconcilekit.Client` finds its cluster: kubeconfig, in-cluster, or either.

Loading is kubernetes-asyncio's; these helpers only decide which loader runs
and read ``$KUBECONFIG`` when called (kubernetes-asyncio reads it once, at
import time).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["load_from_environment", "load_in_cluster", "load_kubeconfig"]

SERVICE_HOST_ENV = "KUBERNETES_SERVICE_HOST"
DEFAULT_KUBECONFIG = "~/.kube/config"


def kubeconfig_source(path: str | os.PathLike[str] | None) -> str:
    """The kubeconfig to read: ``path``, else ``$KUBECONFIG`` (a ``:``-separated list), else
    ``~/.kube/config``. Raises FileNotFoundError naming where it looked."""
    if path is not None:
        source = os.fspath(path)
        if not Path(source).expanduser().is_file():
            raise FileNotFoundError(f"kubeconfig {source!r} does not exist")
        return source
    env = os.environ.get("KUBECONFIG", "")
    if env.strip():
        paths = [p for p in env.split(os.pathsep) if p]
        if not any(Path(p).expanduser().is_file() for p in paths):
            raise FileNotFoundError(f"no file of $KUBECONFIG ({env!r}) exists")
        return env
    default = Path(DEFAULT_KUBECONFIG).expanduser()
    if not default.is_file():
        raise FileNotFoundError(
            f"no kubeconfig: $KUBECONFIG is not set and {default} does not exist")
    return str(default)


async def load_kubeconfig(path: str | os.PathLike[str] | None = None,
                          context: str | None = None) -> Any:
    """A kubernetes-asyncio ``Configuration`` from a kubeconfig (see :func:`kubeconfig_source`)."""
    from kubernetes_asyncio import config
    from kubernetes_asyncio.client import Configuration

    cfg = Configuration()
    await config.load_kube_config(config_file=kubeconfig_source(path), context=context,
                                  client_configuration=cfg)
    return cfg


def load_in_cluster() -> Any:
    """A ``Configuration`` from the pod's service account (token re-read as it rotates)."""
    from kubernetes_asyncio import config
    from kubernetes_asyncio.client import Configuration

    cfg = Configuration()
    config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    return cfg


async def load_from_environment() -> Any:
    """In-cluster when ``$KUBERNETES_SERVICE_HOST`` is set, else the kubeconfig."""
    if os.environ.get(SERVICE_HOST_ENV):
        return load_in_cluster()
    return await load_kubeconfig()
