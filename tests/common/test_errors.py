"""The error model: mapping table, ServiceError, languages, and real aborted calls on the wire."""

from __future__ import annotations

from typing import Any

import grpc
import grpc.aio
import pytest
from google.rpc import error_details_pb2, status_pb2

from ninetynine.common.errors import (
    STATUS_DETAILS_KEY,
    ServiceError,
    error_info,
    lang_from_metadata,
    to_service_error,
)
from ninetynine.engine.errors import ENGINE_DOMAIN, REASON_STATUS, from_rule_error
from ninetynine.engine.rules.errors import TEXTS, Reason, RuleError
from tests.common import probe
from tests.common.conftest import LogCapture, StartProbe


def test_every_reason_has_a_status_code() -> None:
    assert set(REASON_STATUS) == set(Reason)
    assert grpc.StatusCode.OK not in REASON_STATUS.values()


@pytest.mark.parametrize(
    ("reason", "code"),
    [
        (Reason.INVALID_STATE, grpc.StatusCode.INVALID_ARGUMENT),
        (Reason.SIGN_REQUIRED, grpc.StatusCode.INVALID_ARGUMENT),
        (Reason.OVER_99, grpc.StatusCode.FAILED_PRECONDITION),
        (Reason.NOT_YOUR_TURN, grpc.StatusCode.FAILED_PRECONDITION),
        (Reason.REPLAY_UNSUPPORTED, grpc.StatusCode.FAILED_PRECONDITION),
        (Reason.STALE_STATE, grpc.StatusCode.ABORTED),
    ],
)
def test_mapping_follows_the_contract(reason: Reason, code: grpc.StatusCode) -> None:
    assert REASON_STATUS[reason] is code


def test_from_rule_error_keeps_reason_metadata_and_both_texts() -> None:
    err = from_rule_error(RuleError(Reason.OVER_99, cardId="S9", total=95, result=104), ENGINE_DOMAIN)
    assert err.code is grpc.StatusCode.FAILED_PRECONDITION
    assert (err.reason, err.domain) == ("OVER_99", "engine.ninetynine")
    assert err.metadata == {"cardId": "S9", "total": "95", "result": "104"}
    assert err.message("ko") == TEXTS[Reason.OVER_99][0]
    assert err.message("en") == TEXTS[Reason.OVER_99][1]


def test_every_reason_converts_without_error() -> None:
    for reason in Reason:
        err = from_rule_error(RuleError(reason, cardId="C1", detail="x"), "engine.ninetynine")
        assert err.reason == reason.value
        assert err.message("ko") and err.message("en")


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, "ko"),
        ("en", "en"),
        ("en-US,en;q=0.9", "en"),
        ("EN-gb", "en"),
        ("ko-KR,ko;q=0.9,en;q=0.8", "ko"),
        ("ko;q=0.4, en-US;q=0.9", "en"),
        ("fr-FR, en;q=0.5", "en"),
        ("fr-FR", "ko"),
        ("en;q=0", "ko"),
        ("en;q=banana", "ko"),
        ("", "ko"),
    ],
)
def test_lang_from_metadata(header: str | None, expected: str) -> None:
    metadata = () if header is None else (("x-other", "1"), ("accept-language", header))
    assert lang_from_metadata(metadata) == expected


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"code": grpc.StatusCode.OK}, "OK"),
        ({"reason": "notUpper"}, "UPPER_SNAKE"),
        ({"reason": "TRAILING_"}, "UPPER_SNAKE"),
        ({"domain": ""}, "domain"),
        ({"metadata": {"Bad Key": "1"}}, "metadata key"),
    ],
)
def test_service_error_rejects_malformed_fields(kwargs: dict[str, object], problem: str) -> None:
    fields: dict[str, object] = {
        "code": grpc.StatusCode.NOT_FOUND,
        "reason": "ROOM_NOT_FOUND",
        "domain": "session.ninetynine",
        "message_ko": "없어요",
    }
    fields.update(kwargs)
    with pytest.raises(ValueError, match=problem):
        ServiceError(**fields)  # type: ignore[arg-type]


def _details(e: grpc.aio.AioRpcError) -> status_pb2.Status:
    trailers: Any = e.trailing_metadata()  # a grpc.aio.Metadata; the stubs type it loosely
    blobs = [v for k, v in trailers if k == STATUS_DETAILS_KEY]
    assert len(blobs) == 1
    return status_pb2.Status.FromString(blobs[0])


@pytest.mark.parametrize(
    ("metadata", "text"),
    [
        ((), "손에 없는 카드예요"),
        ((("accept-language", "ko-KR"),), "손에 없는 카드예요"),
        ((("accept-language", "en-US,en;q=0.9"),), "That card is not in your hand"),
    ],
)
async def test_aborted_call_carries_one_error_info_in_the_callers_language(
    start_probe: StartProbe, channel_to, logs: LogCapture, metadata, text: str
) -> None:
    port, _ = await start_probe()
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await channel_to(port).unary_unary(probe.UNARY)(b"not-in-hand", metadata=metadata)
    e = caught.value
    assert e.code() is grpc.StatusCode.FAILED_PRECONDITION
    assert e.details() == text

    status = _details(e)
    assert status.code == grpc.StatusCode.FAILED_PRECONDITION.value[0]
    assert status.message == text
    infos = [d for d in status.details if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR)]
    assert len(infos) == 1 and len(status.details) == 1

    info = error_info(e)
    assert info is not None
    assert (info.reason, info.domain, dict(info.metadata)) == (
        "CARD_NOT_IN_HAND",
        "engine.ninetynine",
        {"cardId": "NOPE"},
    )
    line = await logs.rpc_line(probe.UNARY)
    assert (line["code"], line["reason"]) == ("FAILED_PRECONDITION", "CARD_NOT_IN_HAND")


async def test_service_error_raised_by_a_handler_becomes_its_status(
    start_probe: StartProbe, channel_to, logs: LogCapture
) -> None:
    port, _ = await start_probe()
    call = channel_to(port).unary_unary(probe.UNARY)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call(b"raise-service-error", metadata=(("accept-language", "en"),))
    assert caught.value.code() is grpc.StatusCode.NOT_FOUND
    assert caught.value.details() == "Room not found"
    err = to_service_error(caught.value)
    assert (err.reason, err.domain, err.metadata) == (
        "ROOM_NOT_FOUND",
        "session.ninetynine",
        {"roomId": "r1"},
    )
    assert (await logs.rpc_line(probe.UNARY))["code"] == "NOT_FOUND"


async def test_downstream_rule_error_propagates_through_a_second_hop_with_both_languages(
    start_probe: StartProbe, channel_to, logs: LogCapture
) -> None:
    front, _ = await start_probe()
    back, _ = await start_probe()
    call = channel_to(front).unary_unary(probe.UNARY)
    for lang, text in (("en", "That card is not in your hand"), ("ko", "손에 없는 카드예요")):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call(f"relay:127.0.0.1_{back}:not-in-hand".encode(), metadata=(("accept-language", lang),))
        # to_service_error rebuilds both texts from the rule reason (the engine's rule_texts), so the
        # front server can answer in the caller's language whatever language the back server used.
        assert caught.value.code() is grpc.StatusCode.FAILED_PRECONDITION
        assert caught.value.details() == text
        info = error_info(caught.value)
        assert info is not None and info.reason == "CARD_NOT_IN_HAND"
        assert dict(info.metadata) == {"cardId": "NOPE"}


async def test_callers_language_is_forwarded_to_the_next_hop(
    start_probe: StartProbe, channel_to, logs: LogCapture
) -> None:
    front, _ = await start_probe()
    back, _ = await start_probe()
    call = channel_to(front).unary_unary(probe.UNARY)
    # ROOM_NOT_FOUND is not a rule reason: only the back server's own text can be relayed, so it
    # must have answered in the caller's language.
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call(
            f"relay:127.0.0.1_{back}:raise-service-error".encode(), metadata=(("accept-language", "en"),)
        )
    assert caught.value.code() is grpc.StatusCode.NOT_FOUND
    assert caught.value.details() == "Room not found"
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call(f"relay:127.0.0.1_{back}:raise-service-error".encode())
    assert caught.value.details() == "방을 찾을 수 없어요"


async def test_errors_without_error_info_keep_their_code(start_probe: StartProbe, channel_to) -> None:
    port, _ = await start_probe()
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await channel_to(port).unary_unary("/ninetynine.test.v1.Probe/Missing")(b"")
    assert error_info(caught.value) is None
    err = to_service_error(caught.value, default_domain="session.ninetynine")
    assert (err.code, err.reason, err.domain) == (
        grpc.StatusCode.UNIMPLEMENTED,
        "UNIMPLEMENTED",
        "session.ninetynine",
    )


def test_a_refusal_is_the_same_bytes_whatever_order_its_metadata_was_given_in() -> None:
    """Clients and the session's PlayMany compare refusals byte for byte: ErrorInfo's metadata map
    is serialized with its keys sorted, not in the order the map happens to iterate."""
    keys = [f"key{i}" for i in range(12)]
    statuses = {
        ServiceError(
            grpc.StatusCode.FAILED_PRECONDITION,
            "NOT_YOUR_TURN",
            "engine.ninetynine",
            metadata={key: key.upper() for key in order},
            message_ko="지금은 내 차례가 아니에요",
        )
        .to_status()
        .SerializeToString()
        for order in (keys, keys[::-1], keys[5:] + keys[:5])
    }
    assert len(statuses) == 1
