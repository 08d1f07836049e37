"""Views pushed on Subscribe are built once per room version and shared, yet each viewer still gets
exactly the view GetView computes for them (own hand, own language; spectators the public one)."""

from __future__ import annotations

import asyncio

from ninetynine.session.v1 import session_service_pb2 as pb


def _lang(lang: str) -> tuple[tuple[str, str], ...]:
    return (("accept-language", lang),)


async def _collect_views(stub: object, token: str, lang: str, views: asyncio.Queue[pb.ViewUpdate]) -> None:
    stream = stub.Subscribe(pb.SubscribeRequest(token=token, after_seq=0), metadata=_lang(lang))  # type: ignore[attr-defined]
    try:
        async for item in stream:
            if item.HasField("view"):
                views.put_nowait(item.view)
    finally:
        stream.cancel()


async def _view_at_least(views: asyncio.Queue[pb.ViewUpdate], seq: int) -> pb.ViewUpdate:
    while True:
        view = await asyncio.wait_for(views.get(), 30)
        if view.seq >= seq:
            return view


async def test_each_viewer_gets_their_own_view_of_every_version(make_stack) -> None:
    stack = await make_stack(time_scale=1.0)  # 15 s turns: nothing moves unless a test player plays
    a = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=2))
    b = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))
    first_spectator = await stack.stub.Spectate(pb.SpectateRequest(room_id=a.room.room_id))
    second_spectator = await stack.stub.Spectate(pb.SpectateRequest(room_id=a.room.room_id))
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    viewers = [
        (a.seat_token, "ko"),
        (a.seat_token, "en"),
        (b.seat_token, "ko"),
        (first_spectator.spectator_token, "ko"),
        (second_spectator.spectator_token, "ko"),
        (second_spectator.spectator_token, "en"),
    ]

    queues: list[asyncio.Queue[pb.ViewUpdate]] = [asyncio.Queue() for _ in viewers]
    collectors = [
        asyncio.create_task(_collect_views(stack.stub, token, lang, views))
        for (token, lang), views in zip(viewers, queues, strict=True)
    ]
    # A first view on every stream: by then every player's presence change is committed too.
    for views in queues:
        await _view_at_least(views, 1)
    mover_token = a.seat_token
    if not (await stack.stub.GetView(pb.GetViewRequest(token=mover_token))).view.my_turn:
        mover_token = b.seat_token
    mover_view = (await stack.stub.GetView(pb.GetViewRequest(token=mover_token))).view
    played = await stack.stub.Play(
        pb.PlayRequest(token=mover_token, client_seq=1, action=mover_view.legal_plays[0].action)
    )

    hands = {}
    for (token, lang), views in zip(viewers, queues, strict=True):
        pushed = await _view_at_least(views, played.seq)
        expected = await stack.stub.GetView(pb.GetViewRequest(token=token), metadata=_lang(lang))
        assert pushed.seq == expected.seq == played.seq
        assert pushed.view == expected.view, f"{lang} view of {token[:12]} differs from GetView"
        assert pushed.room == expected.room
        hands[token] = {card.card.id for card in pushed.view.hand}
    for collector in collectors:
        collector.cancel()
    assert hands[a.seat_token] and hands[b.seat_token]
    assert hands[a.seat_token].isdisjoint(hands[b.seat_token])
    assert not hands[first_spectator.spectator_token] and not hands[second_spectator.spectator_token]
