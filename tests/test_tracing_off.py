"""Tracing off costs nothing of OpenTelemetry: a process that reconciles, sends API requests
and serves a webhook review without enabling tracing never imports it, though it is
installed; enabling it where it is not installed says which extra to install."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson

import reconcilekit

ROOT = Path(reconcilekit.__file__).parent.parent


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    """``python *argv`` importing this reconcilekit (the one under test)."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True,
                          timeout=120, check=False, env={**os.environ, "PYTHONPATH": path})

WORKLOAD = textwrap.dedent('''
    import importlib.util
    import sys
    import uuid

    import aiohttp
    import anyio
    import orjson

    import reconcilekit
    from reconcilekit import Cache, Client, Controller, Reconciler, Request, Result
    from reconcilekit import Resource, enqueue_object
    from reconcilekit.kinds import CONFIG_MAPS
    from reconcilekit.testing import APIServer
    from reconcilekit.webhook import AdmissionRequest, Verdict, WebhookServer

    WIDGETS = Resource("example.com", "v1", "Widget", "widgets")
    REVIEW = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
              "request": {"uid": str(uuid.uuid4()), "operation": "CREATE",
                          "kind": {"group": "example.com", "version": "v1", "kind": "Widget"},
                          "resource": {"group": "example.com", "version": "v1",
                                       "resource": "widgets"},
                          "name": "w", "namespace": "ns", "userInfo": {"username": "a"},
                          "object": {"apiVersion": "example.com/v1", "kind": "Widget",
                                     "metadata": {"name": "w", "namespace": "ns"}}}}


    async def main() -> dict[str, object]:
        done = anyio.Event()
        webhook = WebhookServer(host="127.0.0.1", port=0)

        @webhook.validator(WIDGETS)
        async def validate(request: AdmissionRequest) -> Verdict:
            return Verdict.allow()

        async with APIServer() as server, Client(server.configuration()) as client:
            await client.create(CONFIG_MAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                              "metadata": {"name": "a"}}, "default")

            class Reads(Reconciler):
                async def reconcile(self, request: Request) -> Result:
                    await client.get(CONFIG_MAPS, request.name, request.namespace)
                    done.set()
                    return Result.done()

            cache = Cache(client, namespace="default")
            controller = Controller("plain", Reads(), cache)
            controller.watch(CONFIG_MAPS, enqueue_object)
            async with anyio.create_task_group() as tg:
                await tg.start(cache.run)
                await cache.wait_for_sync(10)
                await tg.start(controller.run)
                await tg.start(webhook.run)
                await done.wait()
                connector = aiohttp.TCPConnector(ssl=webhook.certificate.client_context())
                async with aiohttp.ClientSession(connector=connector) as session:
                    async with session.post(
                            webhook.base_url + "/validate-example-com-v1-widget",
                            data=orjson.dumps(REVIEW)) as answer:
                        reviewed = (await answer.json())["response"]["allowed"]
                tg.cancel_scope.cancel()
        return {"reviewed": reviewed, "library": reconcilekit.__file__,
                "imported": sorted(m for m in sys.modules
                                   if m.partition(".")[0] == "opentelemetry"),
                "installed": importlib.util.find_spec("opentelemetry.trace") is not None}


    print(orjson.dumps(anyio.run(main)).decode())
''')


def test_without_tracing_enabled_opentelemetry_is_never_imported(tmp_path: Path) -> None:
    script = tmp_path / "workload.py"
    script.write_text(WORKLOAD)
    got = run(str(script))
    assert got.returncode == 0, got.stderr
    outcome = orjson.loads(got.stdout.strip().splitlines()[-1])
    assert outcome == {"reviewed": True, "library": reconcilekit.__file__, "imported": [],
                       "installed": True}


def test_enabling_tracing_without_opentelemetry_names_the_extra_to_install() -> None:
    code = textwrap.dedent('''
        import sys
        sys.modules["opentelemetry"] = None  # as if it were not installed
        import reconcilekit.tracing
        try:
            reconcilekit.tracing.enable()
        except ImportError as err:
            print(type(err).__name__, err)
    ''')
    got = run("-c", code)
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == (
        "ImportError tracing needs OpenTelemetry's API, which is not installed: "
        "pip install 'reconcilekit[tracing]'")
