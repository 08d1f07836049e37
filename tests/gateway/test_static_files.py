"""The web table's files: gzipped for browsers that take it, revalidated by ETag, never stale."""

from __future__ import annotations

import gzip
from pathlib import Path

import aiohttp
from yarl import URL

from ninetynine.gateway.server import STATIC_DIR, RunningGateway


async def test_scripts_come_gzipped_with_an_etag_and_revalidate_to_304(gateway: RunningGateway) -> None:
    url = f"http://127.0.0.1:{gateway.http_port}/js/table.js"
    raw = (STATIC_DIR / "js" / "table.js").read_bytes()
    async with aiohttp.ClientSession(auto_decompress=False) as http:
        async with http.get(url, headers={"Accept-Encoding": "gzip, deflate, br"}) as resp:
            assert resp.status == 200
            assert resp.headers["Content-Encoding"] == "gzip"
            assert resp.headers["Content-Type"].startswith("text/javascript")
            assert resp.headers["Cache-Control"] == "no-cache" and resp.headers["Vary"] == "Accept-Encoding"
            assert "Content-Security-Policy" in resp.headers, "the security headers stay"
            body = await resp.read()
            etag = resp.headers["ETag"]
        assert gzip.decompress(body) == raw and len(body) < len(raw) / 2
        async with http.get(url, headers={"If-None-Match": etag, "Accept-Encoding": "gzip"}) as resp:
            assert resp.status == 304 and await resp.read() == b""
        async with http.get(url, headers={"Accept-Encoding": "identity"}) as resp:
            assert "Content-Encoding" not in resp.headers and await resp.read() == raw
            assert resp.headers["ETag"] == etag, "one ETag for the file, however it travels"


async def test_the_page_and_its_files_and_nothing_outside(gateway: RunningGateway) -> None:
    base = f"http://127.0.0.1:{gateway.http_port}"
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{base}/") as resp:
            assert resp.status == 200 and "<!doctype html>" in await resp.text()
            assert resp.headers["Content-Type"].startswith("text/html")
        async with http.get(f"{base}/demo/rooms.json") as resp:
            assert resp.status == 200 and (await resp.json())["type"] == "rooms"
        server_py = Path(STATIC_DIR).parent / "server.py"
        assert server_py.is_file()
        for path in ("/../server.py", "/%2e%2e/server.py", "/js/%2E%2E/%2E%2E/server.py", "/nothing-here"):
            async with http.get(URL(f"{base}{path}", encoded=True)) as resp:  # sent as written
                assert resp.status == 404, path
