"""A connection's outbox (``ninetynine/gateway/outbox.py``): what one turn of the loop puts goes out
as one write, in order, straight away when the socket takes it; a socket that does not take it
leaves the messages to the writer task, and nothing put later overtakes them."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry

from ninetynine.gateway.metrics import GatewayMetrics
from ninetynine.gateway.outbox import Outbox, Outgoing
from ninetynine.gateway.v1 import gateway_service_pb2 as gw


class _Socket:
    """A transport that records its writes; ``takes`` says whether it writes without waiting."""

    protocol = "ws"
    json_text = True

    def __init__(self) -> None:
        self.takes = True
        self.writes: list[tuple[str, list[str]]] = []  # (how, the messages' errors' reasons)
        self.release = asyncio.Event()
        self.release.set()

    def write_now(self, outs: list[Outgoing]) -> bool:
        if self.takes:
            self.writes.append(("now", [out.msg.error.reason for out in outs]))
        return self.takes

    async def send(self, out: Outgoing) -> None:
        await self.send_many([out])

    async def send_many(self, outs: list[Outgoing]) -> None:
        self.writes.append(("writer", [out.msg.error.reason for out in outs]))
        await self.release.wait()

    async def close(self, code: int) -> None: ...


def _outbox(socket: _Socket, size: int = 16) -> tuple[Outbox, GatewayMetrics]:
    metrics = GatewayMetrics.create(CollectorRegistry())
    outbox = Outbox(socket, metrics, lambda: 0.0, size, lambda: None)
    outbox.start()
    return outbox, metrics


def _message(reason: str) -> Outgoing:
    return Outgoing(gw.ServerMessage(error=gw.Error(reason=reason)))


async def _turns(n: int = 3) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def test_what_one_turn_puts_goes_out_as_one_write_at_its_end() -> None:
    socket = _Socket()
    outbox, metrics = _outbox(socket)
    for reason in ("A", "B", "C"):
        assert outbox.put(_message(reason))
    assert socket.writes == [], "nothing is written before the turn ends"
    await _turns()
    outbox.put(_message("D"))
    await _turns()
    assert socket.writes == [("now", ["A", "B", "C"]), ("now", ["D"])]
    assert metrics.messages.labels("out", "error")._value.get() == 4
    assert outbox.writer is not None
    outbox.writer.cancel()


async def test_a_socket_that_does_not_take_a_write_leaves_it_to_the_writer_and_order_is_kept() -> None:
    socket = _Socket()
    outbox, _ = _outbox(socket)
    socket.takes = False
    socket.release.clear()  # the writer's write waits, as for a client behind on reading
    outbox.put(_message("A"))
    outbox.put(_message("B"))
    await _turns()
    assert socket.writes == [("writer", ["A", "B"])]
    socket.takes = True  # the socket would take more now, but A and B are not out yet
    outbox.put(_message("C"))
    await _turns()
    assert socket.writes == [("writer", ["A", "B"])], "C waits behind the write under way"
    socket.release.set()
    await _turns()
    assert socket.writes == [("writer", ["A", "B"]), ("writer", ["C"])]
    outbox.put(_message("D"))
    await _turns()
    assert socket.writes[-1] == ("now", ["D"]), "with nothing waiting, writes go straight out again"
    assert outbox.writer is not None
    outbox.writer.cancel()


async def test_a_full_backlog_refuses_the_next_message() -> None:
    socket = _Socket()
    socket.takes = False
    socket.release.clear()
    outbox, _ = _outbox(socket, size=3)
    assert all(outbox.put(_message(str(i))) for i in range(3))
    assert not outbox.put(_message("3")), "the fourth is one too many for a backlog of three"
    await _turns()
    assert outbox.put(_message("4")), "the writer took the first batch off the backlog"
    outbox.drop_backlog()
    socket.release.set()
    await _turns()
    assert socket.writes == [("writer", ["0", "1", "2"])], "a dropped backlog is not written"
    assert outbox.writer is not None
    outbox.writer.cancel()
