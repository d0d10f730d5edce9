"""Where a webhook review's CPU goes: a TLS handshake, an HTTP request, the review, apart.

Run: ``python -m benchmarks.admission_parts [--n 2000]``. Numbers go in
docs/performance.md ("Admission webhooks").

The CNClaim validating webhook is served by a :class:`~reconcilekit.webhook.WebhookServer`
in a process of its own (``--serve``); this process is its client, one
blocking socket at a time, so the server's CPU (read from /proc before and
after each part) is spent on that part alone. The parts, each ``n`` times:

* a TLS handshake alone (connect, handshake, close), as kube-apiserver opens
  a connection for each review it has in flight beyond its idle ones;
* a review on a new connection (handshake, one review, close);
* a review on a kept-alive connection (the HTTP request and the review);
* the review alone, in this process (no server): the body decoded
  (``orjson.loads`` and :meth:`AdmissionRequest.from_review`), the handler
  run, the answer encoded.

The review is the AdmissionReview kube-apiserver v1.28 sends for a CNClaim
create, with its headers. Compare the rows of one run: the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import orjson

from examples.cnclaim.admission import WEBHOOK_NAME, add_claim_webhook
from examples.cnclaim.resources import CNCLAIMS
from reconcilekit.lowlevel import event_loop_options
from reconcilekit.webhook import (
    AdmissionRequest,
    CertificateFiles,
    ServingCertificate,
    Verdict,
    WebhookServer,
)
from reconcilekit.webhook._admission_review import review_response

from .proc_stats import cpu_seconds
from .scale_go import CACHE, go_toolchain

ROOT = Path(__file__).resolve().parent.parent
PATH = "/validate-" + CNCLAIMS.group.replace(".", "-") + f"-{CNCLAIMS.version}-cnclaim"


def review_body(uid: str = "0b8c6d1e-2f3a-4b5c-8d7e-9f0a1b2c3d4e") -> bytes:
    """The AdmissionReview kube-apiserver sends for a CNClaim create."""
    gvk = {"group": CNCLAIMS.group, "version": CNCLAIMS.version, "kind": CNCLAIMS.kind}
    gvr = {"group": CNCLAIMS.group, "version": CNCLAIMS.version, "resource": CNCLAIMS.plural}
    claim = {"apiVersion": CNCLAIMS.api_version, "kind": CNCLAIMS.kind,
             "metadata": {"name": "c-0-17", "namespace": "admission-guarded",
                          "uid": "5f0c1d2e-3a4b-4c5d-8e9f-0a1b2c3d4e5f",
                          "creationTimestamp": "2026-01-01T00:00:00Z",
                          "managedFields": [{"manager": "python", "operation": "Update",
                                             "apiVersion": CNCLAIMS.api_version,
                                             "time": "2026-01-01T00:00:00Z",
                                             "fieldsType": "FieldsV1",
                                             "fieldsV1": {"f:spec": {".": {},
                                                                     "f:poolName": {}}}}]},
             "spec": {"poolName": "p"}}
    return json.dumps({
        "kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
        "request": {"uid": uid, "kind": gvk, "resource": gvr, "requestKind": gvk,
                    "requestResource": gvr, "name": "c-0-17",
                    "namespace": "admission-guarded", "operation": "CREATE",
                    "userInfo": {"username": "system:admin",
                                 "groups": ["system:masters", "system:authenticated"]},
                    "object": claim, "oldObject": None, "dryRun": False,
                    "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1",
                                "fieldManager": "python"}}},
        separators=(",", ":")).encode()


def request_bytes(body: bytes) -> bytes:
    """The request as Go's net/http writes it for kube-apiserver's webhook client."""
    return (f"POST {PATH}?timeout=10s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"User-Agent: kube-apiserver-admission\r\nContent-Length: {len(body)}\r\n"
            f"Accept: application/json, */*\r\nContent-Type: application/json\r\n"
            f"Accept-Encoding: gzip\r\n\r\n").encode() + body


def read_response(conn: ssl.SSLSocket) -> bytes:
    """One HTTP/1.1 response's body (Content-Length framed)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head, _, rest = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    while len(rest) < length:
        rest += conn.recv(65536)
    if not head.startswith(b"HTTP/1.1 200"):
        raise SystemExit(f"the webhook answered {head.splitlines()[0]!r}")
    return rest


def serve(ca_file: str, key_file: str, cert_file: str) -> None:
    """The webhook alone on a free port; prints ``port N``, serves until SIGTERM."""
    async def main() -> None:
        server = WebhookServer(name="admission-parts", host="127.0.0.1", port=0,
                               certificate=CertificateFiles(cert_file=cert_file,
                                                            key_file=key_file, ca_file=ca_file))
        add_claim_webhook(server, operator_users=None)
        async with anyio.create_task_group() as tg:
            await tg.start(server.run)
            print(f"port {server.port}", flush=True)
            with anyio.open_signal_receiver(signal.SIGTERM) as signals:
                async for _ in signals:
                    break
            tg.cancel_scope.cancel()

    anyio.run(main, backend_options=event_loop_options())


def go_caller() -> Path | None:
    """``benchmarks/webhook_caller`` built, or None without a Go toolchain (said on stderr)."""
    toolchain = go_toolchain()
    if toolchain is None:
        print("no Go toolchain: the Go client's rows are left out", file=sys.stderr)
        return None
    go, env = toolchain
    binary = CACHE / "webhook-caller"
    CACHE.mkdir(parents=True, exist_ok=True)
    built = subprocess.run(["nice", "-n", "19", str(go), "build", "-o", str(binary), "."],
                           cwd=ROOT / "benchmarks" / "webhook_caller", env=env,
                           capture_output=True, text=True, check=False)
    if built.returncode != 0:
        print(f"building benchmarks/webhook_caller failed: {built.stderr.strip()}",
              file=sys.stderr)
        return None
    return binary


def measure(pid: int, n: int, part: Callable[[], None]) -> float:
    """The server's CPU milliseconds per call of ``part`` (``n`` calls)."""
    before = cpu_seconds(pid)
    for _ in range(n):
        part()
    return (cpu_seconds(pid) - before) / n * 1000


def in_process(n: int) -> dict[str, float]:
    """Microseconds per review of decoding, the handler, and encoding the answer."""
    server = WebhookServer(name="admission-parts", port=0)
    add_claim_webhook(server, operator_users=None)
    handler = server.hooks[PATH].handler
    body = review_body()
    loop = asyncio.new_event_loop()
    out: dict[str, float] = {}
    started = time.process_time()
    for _ in range(n):
        AdmissionRequest.from_review(orjson.loads(body), body=body)
    out["decode"] = (time.process_time() - started) / n * 1e6
    request = AdmissionRequest.from_review(orjson.loads(body), body=body)
    started = time.process_time()
    for _ in range(n):
        verdict = loop.run_until_complete(handler(request))
    assert isinstance(verdict, Verdict), verdict
    out["handler (with a loop turn)"] = (time.process_time() - started) / n * 1e6
    started = time.process_time()
    for _ in range(n):
        orjson.dumps(review_response(request.uid, verdict))
    out["encode"] = (time.process_time() - started) / n * 1e6
    loop.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.admission_parts")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--serve", nargs=3, metavar="FILE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(*args.serve)
        return
    certificate = ServingCertificate.generate(("127.0.0.1",), common_name=WEBHOOK_NAME)
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = certificate.write(tmp)
        webhook = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.admission_parts", "--serve",
             str(Path(tmp) / "ca.crt"), str(key), str(cert)],
            cwd=ROOT, stdout=subprocess.PIPE, text=True)
        try:
            assert webhook.stdout is not None
            port = int(webhook.stdout.readline().split()[1])
            context = certificate.client_context()
            request = request_bytes(review_body())

            def connect() -> ssl.SSLSocket:
                return context.wrap_socket(socket.create_connection(("127.0.0.1", port)),
                                           server_hostname="127.0.0.1")

            def handshake() -> None:
                connect().close()

            def review_new_connection() -> None:
                with connect() as conn:
                    conn.sendall(request)
                    read_response(conn)

            kept = connect()

            def review_kept_alive() -> None:
                kept.sendall(request)
                read_response(kept)

            for part in (handshake, review_new_connection, review_kept_alive):
                measure(webhook.pid, 50, part)  # warm up
            rows = [("TLS handshake alone (connect, handshake, close)",
                     measure(webhook.pid, args.n, handshake)),
                    ("review on a new connection (handshake + request)",
                     measure(webhook.pid, args.n, review_new_connection)),
                    ("review on a kept-alive connection",
                     measure(webhook.pid, args.n, review_kept_alive))]
            kept.close()
            caller = go_caller()
            if caller is not None:
                body = Path(tmp) / "review.json"
                body.write_bytes(review_body())
                url = f"https://127.0.0.1:{port}{PATH}?timeout=10s"
                for mode, label in (("new", "review on a new connection, Go's client"),
                                    ("kept", "review on a kept-alive connection, Go's client")):
                    def call(n: int, mode: str = mode) -> None:
                        subprocess.run([str(caller), str(Path(tmp) / "ca.crt"), url, str(body),
                                        str(n), mode], check=True)
                    call(50)
                    before = cpu_seconds(webhook.pid)
                    call(args.n)
                    rows.append((label, (cpu_seconds(webhook.pid) - before) / args.n * 1000))
        finally:
            webhook.send_signal(signal.SIGTERM)
            webhook.wait(30)
    loop = "uvloop" if event_loop_options() else "asyncio's own loop"
    print(f"\nwebhook server on {loop}, {args.n:,} of each, server CPU per call:\n")
    print("| part | server CPU per call |")
    print("|---|---:|")
    for label, ms in rows:
        print(f"| {label} | {ms:.3f} ms |")
    for label, us in in_process(args.n).items():
        print(f"| the review alone, in process: {label} | {us:.1f} µs |")


if __name__ == "__main__":
    main()
