"""The web table's files over HTTP: gzip when the browser takes it, an ETag, and revalidation.

Each file is read and compressed once (again only when its modification time changes), so a page
load costs a dictionary lookup per file. The names carry no content hash, so nothing may be cached
blindly: every response says ``no-cache`` and the browser revalidates with ``If-None-Match``, which
costs a 304 and no body. A new release is therefore picked up on the next load, never mixed with
stale modules.
"""

from __future__ import annotations

import gzip
import hashlib
import mimetypes
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

CACHE_CONTROL = "no-cache"
# Text smaller than this is sent as is: gzip would save less than its own overhead.
MIN_GZIP_BYTES = 512
_COMPRESSIBLE = ("text/", "application/javascript", "application/json", "image/svg+xml")
_TYPES = {".js": "text/javascript", ".mjs": "text/javascript", ".json": "application/json"}


@dataclass(frozen=True)
class _Entry:
    mtime_ns: int
    body: bytes
    gzipped: bytes | None
    etag: str
    content_type: str


class StaticFiles:
    """Serves the files under ``root``; ``/`` is ``index.html``."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._cache: dict[Path, _Entry] = {}

    def _resolve(self, name: str) -> Path | None:
        path = (self.root / (name or "index.html")).resolve()
        if not path.is_relative_to(self.root) or not path.is_file():
            return None
        return path

    def _entry(self, path: Path) -> _Entry:
        mtime = path.stat().st_mtime_ns
        entry = self._cache.get(path)
        if entry is None or entry.mtime_ns != mtime:
            body = path.read_bytes()
            content_type = (
                _TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            )
            compressible = content_type.startswith(_COMPRESSIBLE) and len(body) >= MIN_GZIP_BYTES
            gzipped = gzip.compress(body, compresslevel=9, mtime=0) if compressible else None
            etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
            entry = _Entry(mtime, body, gzipped, etag, content_type)
            self._cache[path] = entry
        return entry

    async def serve(self, request: web.Request) -> web.Response:
        path = self._resolve(request.match_info.get("path", ""))
        if path is None:
            raise web.HTTPNotFound()
        entry = self._entry(path)
        headers = {"Cache-Control": CACHE_CONTROL, "ETag": entry.etag, "Vary": "Accept-Encoding"}
        if entry.etag in request.headers.get("If-None-Match", ""):
            return web.Response(status=304, headers=headers)
        charset = "utf-8" if entry.content_type.startswith(("text/", "application/json")) else None
        if entry.gzipped is not None and "gzip" in request.headers.get("Accept-Encoding", ""):
            headers["Content-Encoding"] = "gzip"
            return web.Response(
                body=entry.gzipped, content_type=entry.content_type, charset=charset, headers=headers
            )
        return web.Response(
            body=entry.body, content_type=entry.content_type, charset=charset, headers=headers
        )
