"""``TCPProxy``: a TCP proxy in front of an API server, to count, delay, cut and black-hole traffic.

Faults a server cannot inject on itself live between it and the client: a
load balancer or proxy that stops forwarding without closing (the client's
kernel still gets its ACKs from the proxy, so TCP keepalive notices
nothing), a network partition that later heals, a slow link, and the bytes
that actually cross the wire (TLS and HTTP framing included) for a
benchmark. Point the client's configuration at :attr:`TCPProxy.url` instead
of the server's (or write a kubeconfig naming it for another process).
"""

from __future__ import annotations

import asyncio
from types import TracebackType

__all__ = ["TCPProxy"]

_CHUNK = 262_144


class TCPProxy:
    """Forward local connections to ``upstream`` (``https://host:port``), byte for byte.

    ``received`` counts the bytes the upstream sent through the proxy.
    ``stall()`` makes every connection open at that moment stop forwarding, in
    both directions, without closing, for good; connections opened later go
    through. ``partition()`` cuts the link both ways for every connection, open
    or opened later (the client can still connect to the proxy, as to a load
    balancer, but no byte reaches the server or comes back) until ``heal()``,
    which delivers what was held, in order, as TCP's retransmissions would.
    ``latency`` (seconds, settable at any time) delays every chunk of bytes in
    each direction by that long after the proxy read it; order is kept, and
    the rate is not limited (chunks in flight wait out their delays together).
    ``connections`` counts the connections accepted. Use as
    ``async with TCPProxy(configuration.host) as proxy:``; leaving the block
    closes every connection.
    """

    def __init__(self, upstream: str, *, latency: float = 0.0) -> None:
        scheme, _, hostport = upstream.partition("://")
        host, sep, port = hostport.rstrip("/").rpartition(":")
        if not scheme or not sep or not port.isdigit():
            raise ValueError(f"upstream {upstream!r} is not scheme://host:port")
        self._scheme, self._host, self._port = scheme, host.strip("[]"), int(port)
        self.received = 0
        self.connections = 0
        self.latency = latency
        self.url = ""
        self._linked = asyncio.Event()
        self._linked.set()
        self._server: asyncio.Server | None = None
        self._open: list[asyncio.Event] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()  # both ends of every connection

    async def __aenter__(self) -> TCPProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"{self._scheme}://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._server is not None:
            self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        # A connection accepted while the proxy closes (its handler still dialling the
        # upstream) belongs to no task cancelled above: close every socket still open, so
        # none is left for the garbage collector (an "unclosed transport" warning).
        for writer in self._writers:
            writer.close()
        self._writers.clear()

    def stall(self) -> None:
        """Black-hole every connection open now (they stay open, nothing crosses)."""
        for stalled in self._open:
            stalled.set()
        self._open.clear()

    def partition(self) -> None:
        """Cut the link both ways, for open connections and new ones, until :meth:`heal`."""
        self._linked.clear()

    def heal(self) -> None:
        """End a :meth:`partition`: held bytes are delivered, new connections go through."""
        self._linked.set()

    @property
    def partitioned(self) -> bool:
        return not self._linked.is_set()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.add(writer)
        serving = asyncio.current_task()
        assert serving is not None
        self._tasks.add(serving)
        try:
            if not self._linked.is_set():  # a partition: the connection goes nowhere, yet
                await self._linked.wait()
            up_reader, up_writer = await asyncio.open_connection(self._host, self._port)
        except OSError:
            writer.close()  # the upstream refuses: so does the proxy
            self._writers.discard(writer)
            return
        except asyncio.CancelledError:
            writer.close()
            raise
        finally:
            self._tasks.discard(serving)
        self._writers.add(up_writer)
        stalled = asyncio.Event()
        self._open.append(stalled)
        for task in (asyncio.ensure_future(self._pipe(reader, up_writer, stalled, False)),
                     asyncio.ensure_future(self._pipe(up_reader, writer, stalled, True))):
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pipe(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter,
                    stalled: asyncio.Event, count: bool) -> None:
        """Forward ``src`` to ``dst``: each chunk ``latency`` after it was read, in order.

        A reader task reads on while earlier chunks wait out their delay, so
        latency delays the bytes without limiting the rate (N chunks sent at
        once all arrive about ``latency`` later, not N times it)."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def read() -> None:
            try:
                while (data := await src.read(_CHUNK)) and not stalled.is_set():
                    queue.put_nowait((loop.time() + self.latency, data))
            except OSError:
                pass
            queue.put_nowait((loop.time() + self.latency, b""))  # the end, after the rest

        reader = asyncio.ensure_future(read())
        try:
            while True:
                due, data = await queue.get()
                if (wait := due - loop.time()) > 0:
                    await asyncio.sleep(wait)
                await self._linked.wait()
                if stalled.is_set() or not data:
                    break
                if count:
                    self.received += len(data)
                dst.write(data)
                await dst.drain()
            if stalled.is_set():
                await asyncio.Event().wait()  # hold the socket open, forward nothing
        except OSError:
            pass
        finally:
            dst.close()  # first: a second cancellation may come while the reader ends
            self._writers.discard(dst)
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
