"""The in-process controllers' connection to the server they run in.

kube-controller-manager writes through the API like any client; so do the
in-process controllers: JSON over the server's own listener, authenticated
by a token only the server knows (a ``system:masters`` user named
``system:kube-controller-manager``), with kube-controller-manager's
User-Agent, so their writes carry its field manager name and pass
admission and validation as its writes would.
"""

from __future__ import annotations

import ssl
from typing import Any

import aiohttp
import orjson

__all__ = ["USER", "USER_AGENT", "Loopback", "LoopbackError"]

USER = "system:kube-controller-manager"
USER_AGENT = "kube-controller-manager/v1.28.7 (linux/amd64) kubernetes/c8dcb00"


class LoopbackError(Exception):
    """A write the server refused: its status code and ``kind: Status`` body."""

    def __init__(self, method: str, path: str, status: int, body: Any) -> None:
        message = body.get("message", "") if isinstance(body, dict) else str(body)
        super().__init__(f"{method} {path}: {status} {message}")
        self.status = status
        self.body = body


class Loopback:
    """JSON requests to ``url`` with ``token`` (one connection pool, made on first use)."""

    def __init__(self, url: str, token: str, ssl_context: ssl.SSLContext | None) -> None:
        self.url = url
        self._headers = {"Authorization": f"Bearer {token}", "User-Agent": USER_AGENT,
                         "Accept": "application/json"}
        self._ssl = ssl_context
        self._session: aiohttp.ClientSession | None = None

    async def request(self, method: str, path: str, body: Any = None, *,
                      content_type: str = "application/json") -> dict[str, Any]:
        """The decoded answer of a 2xx; :class:`LoopbackError` otherwise."""
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=self._ssl if self._ssl else False),
                trust_env=False)
        headers = dict(self._headers)
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = orjson.dumps(body)
        async with self._session.request(method, self.url + path, data=data,
                                         headers=headers) as response:
            raw = await response.read()
        answer = orjson.loads(raw) if raw else {}
        if response.status >= 300:
            raise LoopbackError(method, path, response.status, answer)
        return answer if isinstance(answer, dict) else {}

    async def delete(self, path: str, options: Any = None) -> bool:
        """DELETE ``path`` (with DeleteOptions ``options``); False if it was gone already,
        :class:`LoopbackError` for any other refusal."""
        try:
            await self.request("DELETE", path, options)
        except LoopbackError as err:
            if err.status == 404:
                return False
            raise
        return True

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
