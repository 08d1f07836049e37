"""The one ``google.rpc.ErrorInfo`` every refusal carries, read the way a client reads it."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2

from ninetynine.common.errors import STATUS_DETAILS_KEY, error_info


def only_error_info(err: grpc.RpcError, domains: Collection[str]) -> error_details_pb2.ErrorInfo:
    """The one ErrorInfo of a failed call; fails the test when there is none or more than one
    detail, or its domain is not one of ``domains``."""
    trailers: Any = err.trailing_metadata() or ()  # type: ignore[attr-defined]
    raw = [v for k, v in trailers if k == STATUS_DETAILS_KEY]
    assert len(raw) == 1, f"exactly one status-details trailer, got {len(raw)}: {err}"
    status = status_pb2.Status.FromString(raw[0])
    assert len(status.details) == 1, f"exactly one detail, got {len(status.details)}"
    info = error_info(err)
    assert info is not None, f"the detail is an ErrorInfo: {err}"
    assert info.domain in domains, info.domain
    return info
