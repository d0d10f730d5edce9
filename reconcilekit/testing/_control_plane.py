"""``ControlPlane``: a real etcd, kube-apiserver and kube-controller-manager for tests.

The envtest convention: the binaries come from an *assets* directory
(``KUBEBUILDER_ASSETS``, as setup-envtest fills it, or
``RECONCILEKIT_TEST_ASSETS``, or a path given in code). There is no kubelet and
no scheduler; :class:`reconcilekit.testing.NodeSimulator` plays their part.

Expected flow::

    async with ControlPlane() as plane:          # or plane.start() / plane.stop()
        async with Client(plane.configuration()) as client:
            ...
        plane.write_kubeconfig("kubeconfig")     # for kubectl or a subprocess

kube-apiserver runs its default admission plugins; ``enable_admission_plugins=
("OwnerReferencesPermissionEnforcement",)`` adds some (the pytest plugin's
session control plane adds that one, as hardened clusters do).
``insecure_skip_tls_verify=True`` on the kubeconfig and configuration methods
gives a client that trusts no CA and skips verification, as a kubeconfig with
``insecure-skip-tls-verify: true`` does.

Options for tests that referee from the server's side: ``users=("a", "b")``
gives each name its own bearer token (in ``system:masters``, like the
admin), so each process a test starts is told apart by the server
(``plane.kubeconfig(user="a")``); ``audit=True`` starts kube-apiserver with
an audit log of every write (:mod:`._audit`, read with
:meth:`ControlPlane.audit_log`). ``server=`` on the kubeconfig and
configuration methods names another address for the same server, e.g. a
:class:`TCPProxy` in front of it (the serving certificate covers
``127.0.0.1``).

Guarantees:
  * Every component listens on loopback, on ports free at start; the data
    directory, the admin token, the service-account key pair and the serving
    certificate (and the CA that signed it, which clients verify) are made
    anew in a temporary directory, removed by :meth:`stop`.
  * :meth:`start` returns when kube-apiserver answers ``/readyz`` and, with
    kube-controller-manager, when the ``default`` ServiceAccount exists (a
    namespace is usable from then on). A component that exits or does not
    get ready in time raises :class:`ControlPlaneError` naming it, with the
    tail of its log; whatever had started is stopped.
  * No process outlives its owner: :meth:`stop` sends SIGTERM to each
    component's process group and SIGKILL after a bound; each component also
    gets the parent-death signal (SIGKILL), so a test process that is killed
    outright takes them along. Processes are started from the calling thread
    (the parent-death signal follows the thread that forked).

Start-up is synchronous (processes and files only, nothing bound to an
event loop), so one control plane can serve a whole pytest session whose
tests each run their own loop; ``async with`` runs the waiting in a worker
thread after starting the processes from the event loop's thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio.to_thread
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from ._audit import AuditLog, audit_policy
from ._tls import ServingCertificate
from .apiserver.kubeconfig import kubeconfig_document, write_kubeconfig

__all__ = ["ASSETS_ENV", "ControlPlane", "ControlPlaneError", "assets_from_env",
           "insecure_kubeconfig"]

ASSETS_ENV = ("RECONCILEKIT_TEST_ASSETS", "KUBEBUILDER_ASSETS")
_ETCD, _APISERVER, _KCM = "etcd", "kube-apiserver", "kube-controller-manager"
_PR_SET_PDEATHSIG = 1
_LOG_TAIL = 20
_POLL = 0.05
_USER_NAME = re.compile(r"[A-Za-z0-9][-A-Za-z0-9.:]*")
_PLUGIN_NAME = re.compile(r"[A-Z][A-Za-z0-9]*")  # as kube-apiserver's plugins are named
_KCM_CONTROLLERS = "*,-podgc,-nodeipam,-nodelifecycle"  # its --controllers: no kubelets


class ControlPlaneError(RuntimeError):
    """A component could not be started; the message names it and ends with its log's tail."""


def assets_from_env() -> Path | None:
    """The assets directory named by ``RECONCILEKIT_TEST_ASSETS`` or ``KUBEBUILDER_ASSETS``."""
    for name in ASSETS_ENV:
        value = os.environ.get(name)
        if value:
            return Path(value)
    return None


def insecure_kubeconfig(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` (a kubeconfig) with every cluster's CA dropped and
    ``insecure-skip-tls-verify: true`` set: its clients skip verifying the server."""
    clusters = [{**entry, "cluster": {
        **{key: value for key, value in entry["cluster"].items()
           if key not in ("certificate-authority", "certificate-authority-data")},
        "insecure-skip-tls-verify": True}} for entry in document["clusters"]]
    return {**document, "clusters": clusters}


_LOWEST_PORT = 10000  # above the well-known and most registered services' ports
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def _free_port() -> int:
    """A port nothing on 127.0.0.1 listens on now, for a component to listen on.

    Chosen below the kernel's ephemeral range: a port from inside it (what
    binding port 0 gives) may be handed to any outgoing connection between
    this check and the component's own bind, and etcd then exits with
    "address already in use". Below the range only another listener can
    take it. Falls back to the kernel's choice where the range is unknown
    or leaves no room below it.
    """
    try:
        lowest_ephemeral = int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        lowest_ephemeral = _LOWEST_PORT
    for _ in range(100 if lowest_ephemeral - _LOWEST_PORT > 1000 else 0):
        port = _LOWEST_PORT + secrets.randbelow(lowest_ephemeral - _LOWEST_PORT)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # taken: try another
            return port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:  # runs in the child between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(1)


def _probe(url: str, *, token: str | None = None, ca_file: Path | None = None,
           body_contains: bytes = b"") -> bool:
    """True if a GET of ``url`` answers 200 (and its body holds ``body_contains``)."""
    context = ssl.create_default_context(cafile=str(ca_file)) if ca_file else None
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"}
                                     if token else {})
    try:
        with urllib.request.urlopen(request, timeout=2, context=context) as response:
            return response.status == 200 and body_contains in response.read()
    except (OSError, ValueError):  # refused, reset, TLS not up yet, 5xx/4xx (HTTPError)
        return False


def _log_tail(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(lines[-_LOG_TAIL:]) or "(empty log)"


class _Component:
    __slots__ = ("args", "log", "name", "process")

    def __init__(self, name: str, process: subprocess.Popen[bytes], log: Path,
                 args: list[str]) -> None:
        self.name, self.process, self.log, self.args = name, process, log, args

    def failed(self, what: str) -> ControlPlaneError:
        return ControlPlaneError(f"{self.name} {what}; last lines of {self.log}:\n"
                                 f"{_log_tail(self.log)}")

    def check_running(self) -> None:
        code = self.process.poll()
        if code is not None:
            raise self.failed(f"exited with code {code} during start-up")

    def stop(self, grace: float) -> None:
        process = self.process
        if process.poll() is None:
            _signal_group(process.pid, signal.SIGCONT)  # a paused one cannot take SIGTERM
            _signal_group(process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(grace)
        _signal_group(process.pid, signal.SIGKILL)  # and anything it started
        process.wait()


_PAUSE_TIMEOUT = 10.0  # seconds for every thread of a paused component to stop


def _stopped(pid: int) -> bool:
    """Whether every thread of process ``pid`` is stopped (state T), or it is gone."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return True
    for task in tasks:
        try:
            stat = Path(f"/proc/{pid}/task/{task}/stat").read_text()
        except FileNotFoundError:
            continue  # that thread ended
        if stat[stat.rindex(")") + 2] not in "Tt":
            return False
    return True


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)


class ControlPlane:
    """etcd, kube-apiserver and (when its binary is there) kube-controller-manager.

    ``assets``: the directory holding the binaries (default: from the
    environment, see :data:`ASSETS_ENV`). ``controller_manager``: None starts
    it when its binary is present. ``start_timeout``: seconds for the whole
    start-up. ``apiserver_flags`` and ``etcd_flags``: extra ``--flag=value`` arguments
    (a larger ``--quota-backend-bytes`` for etcd, say, than its 2 GiB default).
    ``users``: names that get a bearer token each (:meth:`token_for`), as
    members of ``system:masters``. ``audit``: log every write request, and
    every request of ``users`` (:func:`._audit.audit_policy`), for :meth:`audit_log`.
    ``enable_admission_plugins``: admission plugins to run besides kube-apiserver's
    default ones (its ``--enable-admission-plugins``; default: none).
    """

    def __init__(self, assets: str | Path | None = None, *,
                 controller_manager: bool | None = None, start_timeout: float = 60.0,
                 apiserver_flags: tuple[str, ...] = (), etcd_flags: tuple[str, ...] = (),
                 users: tuple[str, ...] = (), audit: bool = False,
                 enable_admission_plugins: Iterable[str] = ()) -> None:
        plugins = tuple(enable_admission_plugins)
        for plugin in plugins:
            if not isinstance(plugin, str) or not _PLUGIN_NAME.fullmatch(plugin):
                raise ValueError(f"admission plugin {plugin!r}: expected a name such as "
                                 f"OwnerReferencesPermissionEnforcement")
        resolved = Path(assets) if assets is not None else assets_from_env()
        if resolved is None:
            raise ControlPlaneError(
                "no assets directory: pass one, or set " + " or ".join(ASSETS_ENV)
                + " to a directory holding etcd and kube-apiserver")
        self.assets = resolved
        self._binaries = {name: self.assets / name for name in (_ETCD, _APISERVER, _KCM)}
        for name in (_ETCD, _APISERVER):
            if not os.access(self._binaries[name], os.X_OK):
                raise ControlPlaneError(f"{name} is not an executable file in {self.assets}")
        if controller_manager is None:
            controller_manager = os.access(self._binaries[_KCM], os.X_OK)
        elif controller_manager and not os.access(self._binaries[_KCM], os.X_OK):
            raise ControlPlaneError(f"{_KCM} is not an executable file in {self.assets}")
        self.controller_manager = controller_manager
        self.start_timeout = start_timeout
        self.apiserver_flags = apiserver_flags
        self.etcd_flags = etcd_flags
        self.token = secrets.token_urlsafe(24)
        for user in users:
            if user == "admin" or not _USER_NAME.fullmatch(user):
                raise ValueError(f"user name {user!r}: expected letters, digits, '-', '.' "
                                 f"or ':' (and not 'admin')")
        if len(set(users)) != len(users):
            raise ValueError(f"user names repeat: {users}")
        self._tokens = {"admin": self.token, **{user: secrets.token_urlsafe(24)
                                                 for user in users}}
        self._users = users
        self.audit = audit
        self.enable_admission_plugins = plugins
        self._dir: Path | None = None
        self._components: list[_Component] = []
        self._port = 0
        self._deadline = 0.0
        self._etcd_url = ""
        self.startup_seconds: float | None = None

    # -- starting ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start every component and wait until the control plane is usable (blocking)."""
        begun = time.monotonic()
        try:
            for check, component, what in self._steps():
                while not check():
                    self._not_yet(component, what)
                    time.sleep(_POLL)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - begun

    async def start_async(self) -> None:
        """:meth:`start` without blocking the event loop: processes start in this thread,
        readiness is probed from a worker thread."""
        begun = time.monotonic()
        steps = self._steps()
        try:
            for check, component, what in steps:
                while not await anyio.to_thread.run_sync(check):
                    self._not_yet(component, what)
                    await anyio.sleep(_POLL)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - begun

    def _steps(self) -> Iterator[tuple[Callable[[], bool], _Component, str]]:
        """Spawn each component in turn; yield (ready check, component, what it waits for)."""
        self._deadline = time.monotonic() + self.start_timeout
        self._prepare()
        yield self._etcd_healthy, self._spawn_etcd(), "become healthy"
        yield self._apiserver_ready, self._spawn_apiserver(), "become ready"
        if self.controller_manager:
            yield (self._default_service_account, self._spawn_controller_manager(),
                   "create the default ServiceAccount")

    def _not_yet(self, component: _Component, what: str) -> None:
        component.check_running()
        if time.monotonic() > self._deadline:
            raise component.failed(f"did not {what} within {self.start_timeout:g}s")

    def _prepare(self) -> None:
        if self._dir is not None:
            raise RuntimeError("ControlPlane is already started")
        self._dir = Path(tempfile.mkdtemp(prefix="reconcilekit-control-plane-"))
        d = self._dir
        (d / "tokens.csv").write_text("".join(
            f"{token},{user},{user}-uid,system:masters\n" for user, token in self._tokens.items()))
        if self.audit:
            (d / "audit-policy.yaml").write_text(yaml.safe_dump(audit_policy(self._users)))
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        (d / "sa.key").write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption()))
        (d / "sa.pub").write_bytes(key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        cert = ServingCertificate.generate(
            ("127.0.0.1", "localhost", "kubernetes", "kubernetes.default",
             "kubernetes.default.svc", "10.0.0.1"), common_name="kube-apiserver")
        (d / "ca.crt").write_bytes(cert.ca_pem)
        (d / "apiserver.crt").write_bytes(cert.cert_pem)
        (d / "apiserver.key").write_bytes(cert.key_pem)
        self._port = _free_port()

    def _spawn(self, name: str, args: list[str]) -> _Component:
        assert self._dir is not None
        log = self._dir / f"{name}.log"
        with log.open("ab") as out:  # a restarted component goes on with the same log
            process = subprocess.Popen(
                [str(self._binaries[name]), *args], stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=_die_with_parent)
        component = _Component(name, process, log, args)
        self._components.append(component)
        return component

    def _spawn_etcd(self) -> _Component:
        assert self._dir is not None
        client, peer = _free_port(), _free_port()
        self._etcd_url = f"http://127.0.0.1:{client}"
        peer_url = f"http://127.0.0.1:{peer}"
        return self._spawn(_ETCD, [
            f"--data-dir={self._dir / 'etcd'}", f"--listen-client-urls={self._etcd_url}",
            f"--advertise-client-urls={self._etcd_url}", f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}", f"--initial-cluster=default={peer_url}",
            "--unsafe-no-fsync=true", "--log-level=warn", *self.etcd_flags])

    def _spawn_apiserver(self) -> _Component:
        d = self._dir
        assert d is not None
        return self._spawn(_APISERVER, [
            f"--etcd-servers={self._etcd_url}", f"--secure-port={self._port}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--cert-dir={d / 'certs'}", f"--tls-cert-file={d / 'apiserver.crt'}",
            f"--tls-private-key-file={d / 'apiserver.key'}",
            f"--token-auth-file={d / 'tokens.csv'}", "--authorization-mode=RBAC",
            f"--service-account-key-file={d / 'sa.pub'}",
            f"--service-account-signing-key-file={d / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc",
            "--service-cluster-ip-range=10.0.0.0/24", "--endpoint-reconciler-type=none",
            "--shutdown-watch-termination-grace-period=2s", "--allow-privileged=true",
            *((f"--enable-admission-plugins={','.join(self.enable_admission_plugins)}",)
              if self.enable_admission_plugins else ()),
            *(() if self.controller_manager else ("--disable-admission-plugins=ServiceAccount",)),
            *((f"--audit-policy-file={d / 'audit-policy.yaml'}",
               f"--audit-log-path={d / 'audit.log'}", "--audit-log-format=json",
               "--audit-log-mode=blocking", "--audit-log-maxsize=0") if self.audit else ()),
            *self.apiserver_flags])

    def _spawn_controller_manager(self) -> _Component:
        d = self._dir
        assert d is not None
        kubeconfig = self.write_kubeconfig(d / "admin.kubeconfig")
        return self._spawn(_KCM, [
            f"--kubeconfig={kubeconfig}", f"--service-account-private-key-file={d / 'sa.key'}",
            f"--root-ca-file={d / 'ca.crt'}", "--leader-elect=false",
            "--authentication-skip-lookup", "--secure-port=0",
            f"--controllers={_KCM_CONTROLLERS}"])

    # -- readiness --------------------------------------------------------------------------

    def _etcd_healthy(self) -> bool:
        return _probe(f"{self._etcd_url}/health", body_contains=b'"health":"true"')

    def _apiserver_ready(self) -> bool:
        return _probe(f"{self.url}/readyz", token=self.token, ca_file=self.ca_file)

    def _default_service_account(self) -> bool:
        return _probe(f"{self.url}/api/v1/namespaces/default/serviceaccounts/default",
                           token=self.token, ca_file=self.ca_file)

    # -- faults from outside (chaos) --------------------------------------------------------

    def kill(self, name: str) -> None:
        """SIGKILL one component (``"kube-apiserver"``, ``"etcd"``,
        ``"kube-controller-manager"``): no shutdown, connections cut as a crash cuts them."""
        component = self._component(name)
        _signal_group(component.process.pid, signal.SIGKILL)
        component.process.wait()

    async def restart(self, name: str, *, within: float | None = None) -> float:
        """Start a component again (killing it first if it runs) with the same command
        line: flags, ports, certificates and data (etcd on its own data directory), and
        wait until it is ready; returns the seconds that took. ``within`` defaults to
        the start-up timeout."""
        if name not in (_ETCD, _APISERVER, _KCM):
            raise ValueError(f"{name!r} cannot be restarted: only {_ETCD!r}, {_APISERVER!r} "
                             f"and {_KCM!r} can")
        old = self._component(name)
        if old.process.poll() is None:
            self.kill(name)
        self._components.remove(old)
        begun = time.monotonic()
        component = self._spawn(name, old.args)
        deadline = begun + (within or self.start_timeout)
        ready = {_APISERVER: self._apiserver_ready, _ETCD: self._etcd_healthy}.get(
            name, lambda: True)
        while not await anyio.to_thread.run_sync(ready):
            component.check_running()
            if time.monotonic() > deadline:
                raise component.failed(f"did not become ready again within "
                                       f"{within or self.start_timeout:g}s")
            await anyio.sleep(_POLL)
        return time.monotonic() - begun

    def pause(self, name: str) -> None:
        """SIGSTOP one component: it holds its connections and answers nothing (a hung
        etcd, a stalled server) until :meth:`resume`. Returns once every thread of it has
        stopped (a signal is delivered to each thread when the kernel next runs it, which
        on a loaded machine may be after a request sent next was answered)."""
        pid = self._component(name).process.pid
        _signal_group(pid, signal.SIGSTOP)
        deadline = time.monotonic() + _PAUSE_TIMEOUT
        while not _stopped(pid):
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"{name} did not stop within {_PAUSE_TIMEOUT:g}s "
                                        "of SIGSTOP")
            time.sleep(0.001)

    def resume(self, name: str) -> None:
        """SIGCONT a component :meth:`pause` stopped."""
        _signal_group(self._component(name).process.pid, signal.SIGCONT)

    def _component(self, name: str) -> _Component:
        for component in self._components:
            if component.name == name:
                return component
        names = ", ".join(c.name for c in self._components) or "nothing (not started)"
        raise ValueError(f"no {name!r} in this control plane; it runs {names}")

    # -- stopping ---------------------------------------------------------------------------

    def stop(self, grace: float = 5.0) -> None:
        """Stop every component (SIGTERM, SIGKILL after ``grace`` seconds), remove the files."""
        components, self._components = self._components, []
        for component in reversed(components):
            component.stop(grace)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    async def __aenter__(self) -> ControlPlane:
        await self.start_async()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await anyio.to_thread.run_sync(self.stop)

    # -- how clients reach it ---------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._dir is not None

    @property
    def pids(self) -> list[int]:
        """The process ids of the running components (etcd first)."""
        return [c.process.pid for c in self._components]

    @property
    def url(self) -> str:
        """``https://127.0.0.1:PORT``."""
        if self._dir is None:
            raise RuntimeError("ControlPlane is not started")
        return f"https://127.0.0.1:{self._port}"

    @property
    def ca_file(self) -> Path:
        """The CA certificate that signed kube-apiserver's serving certificate."""
        if self._dir is None:
            raise RuntimeError("ControlPlane is not started")
        return self._dir / "ca.crt"

    def token_for(self, user: str = "admin") -> str:
        """The bearer token of ``user`` (``"admin"`` or one of ``users``)."""
        try:
            return self._tokens[user]
        except KeyError:
            names = ", ".join(self._tokens)
            raise ValueError(f"no user {user!r} in this control plane; it has {names}") from None

    def audit_log(self) -> AuditLog:
        """A reader of kube-apiserver's audit log (every write request); needs ``audit=True``."""
        if not self.audit:
            raise RuntimeError("this control plane has no audit log: start it with audit=True")
        if self._dir is None:
            raise RuntimeError("ControlPlane is not started")
        return AuditLog(self._dir / "audit.log")

    def configuration(self, *, user: str = "admin", server: str | None = None,
                      insecure_skip_tls_verify: bool = False) -> Any:
        """A kubernetes-asyncio ``Configuration`` for ``user``, verifying TLS against the
        serving CA (with ``insecure_skip_tls_verify``: no CA, ``verify_ssl`` False);
        ``server`` (default :attr:`url`) is where the client connects, e.g. a proxy's URL."""
        from kubernetes_asyncio.client import Configuration

        cfg = Configuration(host=server or self.url)
        cfg.api_key = {"BearerToken": self.token_for(user)}
        cfg.api_key_prefix = {"BearerToken": "Bearer"}
        if insecure_skip_tls_verify:
            cfg.verify_ssl = False
        else:
            cfg.ssl_ca_cert = str(self.ca_file)
        return cfg

    def kubeconfig(self, *, namespace: str = "default", user: str = "admin",
                   server: str | None = None,
                   insecure_skip_tls_verify: bool = False) -> dict[str, Any]:
        """A kubeconfig document (as a dict) for ``user``, trusting the serving CA (with
        ``insecure_skip_tls_verify``: no CA, ``insecure-skip-tls-verify: true``);
        ``server`` (default :attr:`url`) is the address it names."""
        document = kubeconfig_document("envtest", server or self.url, self.token_for(user),
                                       namespace=namespace, ca_pem=self.ca_file.read_bytes())
        return insecure_kubeconfig(document) if insecure_skip_tls_verify else document

    def write_kubeconfig(self, path: str | Path, *, namespace: str = "default",
                         user: str = "admin", server: str | None = None,
                         insecure_skip_tls_verify: bool = False) -> Path:
        """Write :meth:`kubeconfig` to ``path`` (mode 0600) and return the path."""
        return write_kubeconfig(self.kubeconfig(
            namespace=namespace, user=user, server=server,
            insecure_skip_tls_verify=insecure_skip_tls_verify), path)

    def __repr__(self) -> str:
        return f"ControlPlane({self.url if self.running else 'stopped'}, assets={self.assets})"
