"""Where a :class:`reconcilekit.Client` finds its cluster: kubeconfig, in-cluster, or either.

Kubeconfig loading is kubernetes-asyncio's; these helpers decide which loader
runs and read ``$KUBECONFIG`` when called (kubernetes-asyncio reads it once,
at import time).

In-cluster configuration is reconcilekit's own, because the service-account
token rotates: the kubelet writes a new token into the projected volume
(an atomic rename of its ``..data`` link) well before the old one expires,
and the old one may be revoked at any moment (its bound Secret or Pod
deleted). :class:`TokenFile` reads the token again

* when the file changed (its inode, size or modification time; checked on
  every request, one ``stat``), so the next request carries the new token;
* at least once a minute, as client-go's cached file token source does;
* when the server answered 401 to the token it holds: the client then sends
  the request once more with the token read again, if it differs (client-go
  re-reads after a 401 too, but fails that one request).

So a token rotated as the kubelet rotates it fails no request, and a token
revoked before the file changes fails only the requests sent before the file
holds a valid one.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Final

from .._foundations.clock import Clock, SystemClock

__all__ = ["TokenFile", "load_from_environment", "load_in_cluster", "load_kubeconfig",
           "token_file_of"]

log = logging.getLogger("reconcilekit.client")

SERVICE_HOST_ENV = "KUBERNETES_SERVICE_HOST"
SERVICE_PORT_ENV = "KUBERNETES_SERVICE_PORT"
SERVICE_ACCOUNT_DIR: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")
DEFAULT_KUBECONFIG = "~/.kube/config"
TOKEN_REFRESH_PERIOD: Final = 60.0
# Where a configuration made by load_in_cluster keeps its TokenFile (see token_file_of).
_TOKEN_FILE_ATTRIBUTE: Final = "reconcilekit_token_file"


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


class TokenFile:
    """A bearer token read from a file that something else rotates (the module docstring).

    ``token()`` returns the token, read again when the file changed, when
    ``refresh_period`` seconds of ``clock`` passed since the last
    read, or after :meth:`refresh_after_rejection`. Leading and trailing
    whitespace is dropped (a token written by hand often ends with a newline,
    which no HTTP header may hold). A file that is missing or empty when read
    again keeps the token read before (a rotation in progress) and logs one
    line; when first read it raises ValueError naming the file.
    """

    def __init__(self, path: str | os.PathLike[str], *,
                 refresh_period: float = TOKEN_REFRESH_PERIOD, clock: Clock | None = None
                 ) -> None:
        if refresh_period <= 0:
            raise ValueError(f"refresh_period must be > 0 seconds, got {refresh_period}")
        self.path = Path(path)
        self.refresh_period = refresh_period
        self._clock = clock if clock is not None else SystemClock()
        self._due = 0.0
        self.reads = 0  # how many times the file was read (for tests and debugging)
        self._stamp = self._stat()
        self._token = self._read(first=True)

    def token(self) -> str:
        """The current token (read again first if the file changed or is due)."""
        stamp = self._stat()
        if stamp != self._stamp or self._clock.monotonic() >= self._due:
            self._stamp = stamp
            self._token = self._read()
        return self._token

    def refresh_after_rejection(self, sent: str) -> bool:
        """The server answered 401 to ``sent``: read the file again now. True if the token
        now differs from ``sent`` (sending again may succeed); False if not."""
        if self._token == sent:
            self._stamp = self._stat()
            self._token = self._read()
        return self._token != sent

    def _stat(self) -> tuple[int, int, int]:
        try:
            st = self.path.stat()
        except OSError:
            return (0, 0, 0)
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _read(self, *, first: bool = False) -> str:
        self._due = self._clock.monotonic() + self.refresh_period
        try:
            token = self.path.read_text().strip()
            if not token:
                raise ValueError("it is empty")
        except (OSError, ValueError) as err:
            what = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
            if first:
                raise ValueError(f"cannot read the service-account token file "
                                 f"{self.path}: {what}") from None
            log.warning("cannot read the service-account token file %s (keeping the token "
                        "read before): %s", self.path, what)
            return self._token
        self.reads += 1
        return token

    def __repr__(self) -> str:
        return f"TokenFile({str(self.path)!r})"


def token_file_of(configuration: Any) -> TokenFile | None:
    """The :class:`TokenFile` a configuration from :func:`load_in_cluster` reads its token
    from (None for other configurations)."""
    source = getattr(configuration, _TOKEN_FILE_ATTRIBUTE, None)
    return source if isinstance(source, TokenFile) else None


def load_in_cluster(*, token_file: str | os.PathLike[str] | None = None,
                    ca_file: str | os.PathLike[str] | None = None,
                    host: str | None = None, insecure_skip_tls_verify: bool = False) -> Any:
    """A ``Configuration`` as the pod's service account, its token re-read as it rotates.

    The defaults are the kubelet's: the token and CA from
    ``/var/run/secrets/kubernetes.io/serviceaccount/``, the server from
    ``$KUBERNETES_SERVICE_HOST`` and ``$KUBERNETES_SERVICE_PORT``. Each may be
    given instead (a token file mounted elsewhere, a test's token and CA,
    ``host`` as ``https://HOST:PORT``). ``insecure_skip_tls_verify=True``
    reads no CA and does not verify the server's certificate (kubernetes-asyncio's
    ``verify_ssl = False``), as a kubeconfig's ``insecure-skip-tls-verify:
    true`` does: for a test against a server whose CA is not at hand; a Pod
    always has its CA. Raises ValueError naming what is missing, or that a
    ``ca_file`` was given with ``insecure_skip_tls_verify`` (as kubectl refuses
    a CA with its insecure flag).
    """
    from kubernetes_asyncio.client import Configuration

    if host is None:
        service_host = os.environ.get(SERVICE_HOST_ENV, "")
        service_port = os.environ.get(SERVICE_PORT_ENV, "")
        if not service_host or not service_port:
            raise ValueError(f"not in a cluster: ${SERVICE_HOST_ENV} and ${SERVICE_PORT_ENV} "
                             "must both be set (or pass host=)")
        if ":" in service_host:  # an IPv6 address, as Go's net.JoinHostPort writes it
            service_host = f"[{service_host}]"
        host = f"https://{service_host}:{service_port}"
    if insecure_skip_tls_verify and ca_file is not None:
        raise ValueError(f"a CA file ({ca_file}) with insecure_skip_tls_verify=True: give one "
                         f"or the other")
    ca = Path(ca_file) if ca_file is not None else SERVICE_ACCOUNT_DIR / "ca.crt"
    if not insecure_skip_tls_verify:
        try:
            if not ca.read_bytes().strip():
                raise ValueError(f"the cluster's CA file {ca} is empty")
        except OSError as err:
            raise ValueError(f"cannot read the cluster's CA file {ca}: {err.strerror}") from None
    source = TokenFile(token_file if token_file is not None else SERVICE_ACCOUNT_DIR / "token")
    cfg = Configuration(host=host)
    if insecure_skip_tls_verify:
        cfg.verify_ssl = False
    else:
        cfg.ssl_ca_cert = str(ca)
    cfg.api_key = {"BearerToken": source.token()}
    cfg.api_key_prefix = {"BearerToken": "Bearer"}

    def refresh(configuration: Any) -> None:
        configuration.api_key["BearerToken"] = source.token()

    cfg.refresh_api_key_hook = refresh
    setattr(cfg, _TOKEN_FILE_ATTRIBUTE, source)
    return cfg


async def load_from_environment() -> Any:
    """In-cluster when ``$KUBERNETES_SERVICE_HOST`` is set, else the kubeconfig."""
    if os.environ.get(SERVICE_HOST_ENV):
        return load_in_cluster()
    return await load_kubeconfig()
