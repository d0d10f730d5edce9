"""pytest plugin (entry point ``pytest11``): ``apiserver``, ``client`` and ``kube_client``.

``apiserver`` yields a :class:`reconcilekit.testing.Cluster` on one of three
backends, chosen by the environment:

* ``RECONCILEKIT_TEST_KUBECONFIG=PATH``: the existing cluster of that kubeconfig;
* ``RECONCILEKIT_TEST_ASSETS=DIR`` (or envtest's ``KUBEBUILDER_ASSETS``, read
  when the first is unset): one :class:`ControlPlane` (etcd, kube-apiserver, and
  kube-controller-manager when the directory has it) from those binaries,
  started on first use and shared by the whole session;
* neither: a fresh in-process :class:`APIServer` per test (the default).

On a real backend each test gets a namespace of its own (usable: its
``default`` ServiceAccount and ``kube-root-ca.crt`` ConfigMap exist), and tests
marked ``in_process_only`` (fault injection) are skipped with the reason. Cleanup on
a real backend:

* the test's teardown deletes its namespace; a :class:`NamespaceReaper`
  waits for it to go in the background (releasing what holds it when it
  lingers; emptying and finalizing it itself on a control plane without
  kube-controller-manager, as envtest's binaries make one), and a namespace
  still there after the timeout is reported as an error at teardown of the
  test it was made for, naming what holds it;
* at the end of the session every namespace is settled, the objects given to
  :meth:`Cluster.delete_at_end` are deleted, and any cluster-scoped object
  (CRD, webhook configuration, APIService, ClusterRole, Namespace, ...)
  created since the session first used the cluster fails the session,
  reported for the tests that ran when it was created.
``kube_client`` is a kubernetes-asyncio ``ApiClient`` for the cluster,
``client`` a :class:`reconcilekit.Client`.

Every cache made in the session detects mutations of the objects it shares
(``shared=True`` reads), on any backend: after each test (and again after its
teardown) the objects handed out are compared with what the cache holds, and
a test that changed one fails with :class:`CachedObjectMutated`, naming the
resource, the object and the field.

Admission plugins kube-apiserver runs only when told
(``OwnerReferencesPermissionEnforcement``) are on in the in-process server
and the session's control plane, and may be off in a kubeconfig's cluster.
A test marked ``admission_plugin("Name")`` is skipped, with the reason,
where the cluster does not run it; the cluster is probed by what it admits
(:mod:`._admission_probe`), once a session. ``admission_plugin_enabled`` is
that probe as a fixture, for a test that asserts what either case does
(marked ``admission_plugin("Name", required=False)``, so that
``-m admission_plugin`` selects it with the others).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from .._cache.mutation_detector import DETECTOR, CachedObjectMutated, enable_by_default
from .._client.client import Client
from ._admission_probe import PROBED_PLUGINS, AdmissionPlugins
from ._cluster import (
    KUBECONFIG_ENV,
    NO_FAULTS_REASON,
    OPTIONAL_ADMISSION_PLUGINS,
    Cluster,
    delete_objects,
    open_cluster,
)
from ._control_plane import ControlPlane, assets_from_env
from ._leftovers import RunWindow, Snapshot, settled_leftovers, snapshot
from ._namespace_reaper import NamespaceReaper

_plane: ControlPlane | None = None
_plane_kubeconfig: Path | None = None


def backend() -> str:
    """``"kubeconfig"``, ``"control-plane"`` or ``"in-process"``, from the environment."""
    if os.environ.get(KUBECONFIG_ENV):
        return "kubeconfig"
    if assets_from_env() is not None:
        return "control-plane"
    return "in-process"


CONTROLLERS_REASON = ("the test chooses the cluster's controllers, which only the in-process "
                      "API server lets a test do")


def pytest_configure(config: pytest.Config) -> None:
    enable_by_default()
    config.addinivalue_line(
        "markers", "in_process_only: needs reconcilekit's in-process API server "
        "(skipped against a real API server)")
    config.addinivalue_line(
        "markers", "controllers(*names): the in-process server's controllers, as "
        "kube-controller-manager's --controllers flag names them ('*', '-deployment'); "
        "skipped against a real API server, whose controllers a test cannot choose")
    if backend() == "kubeconfig" and _skips_tls_verify(os.environ[KUBECONFIG_ENV]):
        # chosen by whoever runs the suite: the official client's warning on each request
        # says nothing a test could act on (and fails a run that makes warnings errors)
        config.addinivalue_line("filterwarnings",
                                f"ignore:{INSECURE_REQUEST_WARNING}:Warning")
    config.addinivalue_line(
        "markers", "admission_plugin(*names, required=True): the test depends on admission "
        "plugins kube-apiserver runs only when --enable-admission-plugins names them "
        f"({', '.join(sorted(PROBED_PLUGINS))}); the cluster is probed for each once a "
        "session and the test skipped where one is off (required=False: it runs either "
        "way and asks the admission_plugin_enabled fixture)")


ADMISSION_MARKER = "admission_plugin"
INSECURE_REQUEST_WARNING = "Unverified HTTPS request is being made"  # urllib3's words


def _skips_tls_verify(path: str) -> bool:
    """Whether the current context of the kubeconfig at ``path`` sets
    ``insecure-skip-tls-verify`` (False when it cannot be read: the fixture says why)."""
    try:
        document = yaml.safe_load(Path(path).read_text())
        contexts = {c["name"]: c["context"] for c in document.get("contexts") or ()}
        clusters = {c["name"]: c["cluster"] for c in document.get("clusters") or ()}
        cluster = clusters[contexts[document["current-context"]]["cluster"]]
        return cluster.get("insecure-skip-tls-verify") is True
    except (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError):
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A misused ``admission_plugin`` marker stops the run, naming the test."""
    for item in items:
        for marker in item.iter_markers(ADMISSION_MARKER):
            problem = _marker_problem(marker, getattr(item, "fixturenames", ()))
            if problem:
                raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{ADMISSION_MARKER}"
                                        f"{marker.args}: {problem}")


def _marker_problem(marker: pytest.Mark, fixtures: Any) -> str | None:
    if not marker.args:
        return "name at least one admission plugin"
    unknown = [name for name in marker.args if name not in PROBED_PLUGINS]
    if unknown:
        return (f"no probe for {', '.join(map(repr, unknown))}; the plugins a probe can "
                f"find: {', '.join(sorted(PROBED_PLUGINS))}")
    if set(marker.kwargs) - {"required"} or not isinstance(
            marker.kwargs.get("required", True), bool):
        return f"the only keyword is required=True or False, got {marker.kwargs}"
    if "apiserver" not in fixtures:
        return "the test uses no apiserver fixture (nor client, kube_client), whose cluster " \
               "the marker is about"
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """The test fails if it mutated an object a cache shares (a test that failed already
    has it reported at teardown)."""
    __tracebackhide__ = True
    result = yield
    _raise_cache_mutations()
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None
                            ) -> Generator[None, object, object]:
    __tracebackhide__ = True
    result = yield
    _raise_cache_mutations()
    return result


def _raise_cache_mutations() -> None:
    __tracebackhide__ = True  # the message says it all; the plugin's frames would not
    found = DETECTOR.take()
    if found:
        raise CachedObjectMutated("\n".join(found))


def pytest_report_header(config: pytest.Config) -> str:
    kind = backend()
    if kind == "kubeconfig":
        return f"reconcilekit backend: the cluster of {os.environ[KUBECONFIG_ENV]}"
    if kind == "control-plane":
        return f"reconcilekit backend: kube-apiserver started from {assets_from_env()}"
    return "reconcilekit backend: the in-process API server"


SESSION_NODE = "reconcilekit: the session's cleanup"


@dataclass
class _Cleanup:
    """What the session needs to clean a real cluster: see the module docstring.

    ``reaper``, ``before``, ``configuration`` and ``statistics`` change only
    through the methods below, each once a session."""

    reaper: NamespaceReaper | None = None
    configuration: Any = None
    before: Snapshot | None = None
    shared: dict[str, str] = field(default_factory=dict)  # API path -> the test that asked
    started: dict[str, float] = field(default_factory=dict)
    windows: list[RunWindow] = field(default_factory=list)
    locations: dict[str, tuple[str, int | None, str]] = field(default_factory=dict)
    statistics: str = ""

    async def begin(self, configuration: Any, *,
                    namespace_controller: bool = True) -> NamespaceReaper:
        """The session's first test on a real cluster: what the cluster holds now is
        ``before``, and a reaper of test namespaces starts (emptying them itself when
        no ``namespace_controller`` runs); returns it."""
        if self.reaper is None:
            self.before = await _snapshot(configuration)
            self.reaper = NamespaceReaper(configuration,
                                          namespace_controller=namespace_controller)
        return self.reaper

    def end(self) -> None:
        """The session ends: the reaper is closed and dropped, its statistics kept for the
        terminal summary."""
        assert self.reaper is not None
        self.reaper.close()
        self.statistics = str(self.reaper.statistics)
        self.reaper = None

    async def kubeconfig_configuration(self, path: str) -> Any:
        """The configuration of the kubeconfig at ``path``, loaded once per session."""
        if self.configuration is None:
            from kubernetes_asyncio import config as kube_config
            from kubernetes_asyncio.client import Configuration

            configuration = Configuration()
            await kube_config.load_kube_config(config_file=path,
                                               client_configuration=configuration)
            self.configuration = configuration
        return self.configuration


_CLEANUP = pytest.StashKey[_Cleanup]()


def _cleanup(config: pytest.Config) -> _Cleanup:
    if _CLEANUP not in config.stash:
        config.stash[_CLEANUP] = _Cleanup()
    return config.stash[_CLEANUP]


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.pluginmanager.register(_Recorder(session.config), "reconcilekit-cleanup")


class _Recorder:
    """When each test ran, and the namespace failures reported since the last test."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logstart(self, nodeid: str,
                                location: tuple[str, int | None, str]) -> None:
        state = _cleanup(self.config)
        state.started[nodeid] = time.time()
        state.locations[nodeid] = location

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        state = _cleanup(self.config)
        state.windows.append(RunWindow(nodeid, state.started.pop(nodeid, 0.0), time.time()))
        if state.reaper is not None:
            for failure in state.reaper.failures():
                _report(self.config, failure.owner, failure.message)


def _report(config: pytest.Config, nodeid: str, message: str) -> None:
    """An error at teardown of ``nodeid`` (a test that already ran, or the session)."""
    location = _cleanup(config).locations.get(nodeid, ("reconcilekit", None, nodeid))
    config.hook.pytest_runtest_logreport(report=pytest.TestReport(
        nodeid, location, {}, "failed", message, "teardown"))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    global _plane
    state = session.config.stash.get(_CLEANUP, None)
    if state is not None and state.reaper is not None:
        failed = False
        try:
            for failure in state.reaper.finish():
                _report(session.config, failure.owner, failure.message)
                failed = True
            for nodeid, message in state.reaper.call(_session_end(state, state.reaper.stuck)):
                _report(session.config, nodeid, message)
                failed = True
        except Exception as e:  # the cluster went away: say so rather than crash pytest
            _report(session.config, SESSION_NODE,
                    f"the session's cleanup could not run: {type(e).__name__}: {e}")
            failed = True
        finally:
            state.end()
        if failed:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if _plane is not None:
        _plane.stop()
        _plane = None


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    state = terminalreporter.config.stash.get(_CLEANUP, None)
    if state is not None and state.statistics:
        terminalreporter.write_line(f"reconcilekit: {state.statistics}")
    plugins = terminalreporter.config.stash.get(_ADMISSION, None)
    if plugins is not None and plugins.known():
        terminalreporter.write_line("reconcilekit: admission plugins probed: " + ", ".join(
            f"{name} {'on' if on else 'off'}" for name, on in sorted(plugins.known().items())))


_ADMISSION = pytest.StashKey[AdmissionPlugins]()


def _admission(config: pytest.Config) -> AdmissionPlugins:
    if _ADMISSION not in config.stash:
        config.stash[_ADMISSION] = AdmissionPlugins()
    return config.stash[_ADMISSION]


async def _require_admission_plugins(request: pytest.FixtureRequest, cluster: Cluster) -> None:
    """Skip the test when its cluster lacks an admission plugin it is marked to need."""
    for marker in request.node.iter_markers(ADMISSION_MARKER):
        if not marker.kwargs.get("required", True):
            continue
        for name in marker.args:
            if not await _admission(request.config).enabled(cluster, name,
                                                            namespace=cluster.namespace):
                pytest.skip(f"needs the {name} admission plugin, which this cluster does not "
                            f"run (a dry-run request it refuses was admitted); kube-apiserver "
                            f"runs it when --enable-admission-plugins names it")


async def _session_end(state: _Cleanup, stuck: frozenset[str]) -> list[tuple[str, str]]:
    """Delete the session's shared objects; what the session left, grouped by test."""
    assert state.reaper is not None and state.before is not None
    cluster = state.reaper.cluster()
    out = [(SESSION_NODE, f"a shared object: {problem}")
           for problem in await delete_objects(cluster, list(state.shared))]
    found, after = await settled_leftovers(cluster, state.before, state.windows, stuck=stuck)
    by_test: defaultdict[str, list[str]] = defaultdict(list)
    for left in found:
        by_test[left.tests[0] if len(left.tests) == 1 else SESSION_NODE].append(str(left))
    for resource, why in after.failed.items():
        if resource not in state.before.failed:
            by_test[SESSION_NODE].append(f"listing {resource} at the end answered {why}")
    out += [(nodeid, "left behind in the cluster after the session:\n" + "\n".join(
        f"  {line}" for line in lines)) for nodeid, lines in by_test.items()]
    return out


def _control_plane() -> tuple[ControlPlane, Path]:
    """The session's control plane, started on first use (blocking, in the main thread)."""
    global _plane, _plane_kubeconfig
    if _plane is None:
        plane = ControlPlane(enable_admission_plugins=OPTIONAL_ADMISSION_PLUGINS)
        plane.start()
        _plane = plane
        _plane_kubeconfig = plane.write_kubeconfig(
            Path(tempfile.mkdtemp(prefix="reconcilekit-test-")) / "kubeconfig")
    assert _plane_kubeconfig is not None
    return _plane, _plane_kubeconfig


@pytest_asyncio.fixture
async def apiserver(request: pytest.FixtureRequest) -> AsyncIterator[Cluster]:
    """The API server a test talks to: in-process, the session's control plane, or a cluster."""
    kind = backend()
    if kind != "in-process" and request.node.get_closest_marker("in_process_only"):
        pytest.skip(NO_FAULTS_REASON)
    chosen = request.node.get_closest_marker("controllers")
    if kind != "in-process" and chosen is not None:
        pytest.skip(CONTROLLERS_REASON)
    if kind == "in-process":
        async with open_cluster(controllers=chosen.args if chosen else ("*",)) as cluster:
            await _require_admission_plugins(request, cluster)
            yield cluster
        return
    state = _cleanup(request.config)
    kubeconfig: Path | str
    namespace_controller = True  # a kubeconfig's cluster runs kube-controller-manager
    if kind == "control-plane":
        plane, kubeconfig = _control_plane()
        configuration = plane.configuration()
        namespace_controller = plane.controller_manager
    else:
        kubeconfig = os.environ[KUBECONFIG_ENV]
        configuration = await state.kubeconfig_configuration(kubeconfig)
    reaper = await state.begin(configuration, namespace_controller=namespace_controller)
    nodeid = request.node.nodeid

    def delete_at_end(path: str) -> None:
        state.shared.setdefault(path, nodeid)

    async with open_cluster(kubeconfig, configuration=configuration, test=nodeid,
                            reaper=reaper, delete_at_end=delete_at_end) as cluster:
        await _require_admission_plugins(request, cluster)
        yield cluster


async def _snapshot(configuration: Any) -> Snapshot:
    cluster = Cluster(configuration)
    try:
        return await snapshot(cluster)
    finally:
        await cluster.close()


@pytest_asyncio.fixture
async def client(apiserver: Cluster) -> AsyncIterator[Client]:
    """A :class:`reconcilekit.Client` for :func:`apiserver` (a test may define its own)."""
    async with Client(apiserver.configuration) as c:
        yield c


@pytest_asyncio.fixture
async def admission_plugin_enabled(apiserver: Cluster, request: pytest.FixtureRequest
                                   ) -> Callable[[str], Awaitable[bool]]:
    """``await admission_plugin_enabled("OwnerReferencesPermissionEnforcement")``: whether
    :func:`apiserver`'s cluster runs that plugin (probed once a session)."""
    plugins = _admission(request.config)

    async def enabled(name: str) -> bool:
        return await plugins.enabled(apiserver, name, namespace=apiserver.namespace)

    return enabled


@pytest_asyncio.fixture
async def kube_client(apiserver: Cluster) -> AsyncIterator[Any]:
    """A kubernetes-asyncio ``ApiClient`` for :func:`apiserver`."""
    async with apiserver.api_client() as api:
        yield api
