"""The engine's refusals as service errors: the rule-reason → status table and its conversions.

Rule refusals from the engine become :class:`~ninetynine.common.errors.ServiceError` through
:func:`from_rule_error`, which uses the single mapping table :data:`REASON_STATUS` (documented in
docs/engine-api.md):

=====================================================================  ======================
reason                                                                 status code
=====================================================================  ======================
INVALID_OPTION, INVALID_PLAYER_COUNT, INVALID_PLAYER_ID, INVALID_STATE, INVALID_ARGUMENT
SIGN_REQUIRED, ACE_VALUE_REQUIRED, ACE_VALUE_INVALID,
JOKER_VALUE_REQUIRED, JOKER_OUT_OF_RANGE, DIR_REQUIRED,
DIR_NOT_ALLOWED, CHOICE_NOT_ALLOWED, UNKNOWN_RULES, INVALID_OVERRIDE
OVER_99, BELOW_ZERO, NOT_YOUR_TURN, CARD_NOT_IN_HAND, GAME_FINISHED,   FAILED_PRECONDITION
CARD_TOO_EARLY, SAME_NUMBER_TWICE, UNKNOWN_PLAYER, REPLAY_UNSUPPORTED,
CARD_NOT_PLAYABLE, NOT_FIRST_OF_TWO, DISCARD_NOT_ALLOWED,
NOT_A_PAIR, ALREADY_PASSED
STALE_STATE                                                            ABORTED
=====================================================================  ======================

The trick game's own reasons (:class:`~ninetynine.engine.trick.errors.TrickReason`) have their
table, :data:`TRICK_REASON_STATUS`, and :func:`from_trick_error`; a trick refusal with one of the
adding game's reasons uses :data:`REASON_STATUS` and that reason's texts.

A caller of the engine (or of a service that passes its refusals on) turns a failed call into a
:class:`~ninetynine.common.errors.ServiceError` with :func:`from_rpc_error`, never with
:func:`~ninetynine.common.errors.to_service_error` alone: a rule reason then always gets both
languages back from the rules' texts instead of the one the status message was sent in
(``tests/common/test_reason_texts.py`` finds a direct call).
"""

from __future__ import annotations

from collections.abc import Mapping

import grpc

from ninetynine.common.errors import ServiceError, to_service_error
from ninetynine.engine.rules.errors import Reason, RuleError
from ninetynine.engine.rules.errors import message as rule_message
from ninetynine.engine.trick.errors import TrickError, TrickReason
from ninetynine.engine.trick.errors import message as trick_message

__all__ = [
    "ENGINE_DOMAIN",
    "REASON_STATUS",
    "TRICK_REASON_STATUS",
    "from_rpc_error",
    "from_rule_error",
    "from_trick_error",
    "rule_texts",
]

ENGINE_DOMAIN = "engine.ninetynine"

_C = grpc.StatusCode
REASON_STATUS: dict[Reason, grpc.StatusCode] = {
    # The request is malformed whatever the game state.
    Reason.INVALID_OPTION: _C.INVALID_ARGUMENT,
    Reason.INVALID_PLAYER_COUNT: _C.INVALID_ARGUMENT,
    Reason.INVALID_PLAYER_ID: _C.INVALID_ARGUMENT,
    Reason.INVALID_STATE: _C.INVALID_ARGUMENT,
    Reason.SIGN_REQUIRED: _C.INVALID_ARGUMENT,
    Reason.ACE_VALUE_REQUIRED: _C.INVALID_ARGUMENT,
    Reason.ACE_VALUE_INVALID: _C.INVALID_ARGUMENT,
    Reason.JOKER_VALUE_REQUIRED: _C.INVALID_ARGUMENT,
    Reason.JOKER_OUT_OF_RANGE: _C.INVALID_ARGUMENT,
    Reason.DIR_REQUIRED: _C.INVALID_ARGUMENT,
    Reason.DIR_NOT_ALLOWED: _C.INVALID_ARGUMENT,
    Reason.CHOICE_NOT_ALLOWED: _C.INVALID_ARGUMENT,
    Reason.UNKNOWN_RULES: _C.INVALID_ARGUMENT,
    Reason.INVALID_OVERRIDE: _C.INVALID_ARGUMENT,
    # Well formed, but this game state refuses it.
    Reason.OVER_99: _C.FAILED_PRECONDITION,
    Reason.BELOW_ZERO: _C.FAILED_PRECONDITION,
    Reason.NOT_YOUR_TURN: _C.FAILED_PRECONDITION,
    Reason.CARD_NOT_IN_HAND: _C.FAILED_PRECONDITION,
    Reason.GAME_FINISHED: _C.FAILED_PRECONDITION,
    Reason.CARD_TOO_EARLY: _C.FAILED_PRECONDITION,
    Reason.SAME_NUMBER_TWICE: _C.FAILED_PRECONDITION,
    Reason.CARD_NOT_PLAYABLE: _C.FAILED_PRECONDITION,
    Reason.NOT_FIRST_OF_TWO: _C.FAILED_PRECONDITION,
    Reason.DISCARD_NOT_ALLOWED: _C.FAILED_PRECONDITION,
    Reason.NOT_A_PAIR: _C.FAILED_PRECONDITION,
    Reason.ALREADY_PASSED: _C.FAILED_PRECONDITION,
    Reason.UNKNOWN_PLAYER: _C.FAILED_PRECONDITION,
    Reason.REPLAY_UNSUPPORTED: _C.FAILED_PRECONDITION,
    # The caller's view of the game is out of date: re-read and retry.
    Reason.STALE_STATE: _C.ABORTED,
}


TRICK_REASON_STATUS: dict[TrickReason, grpc.StatusCode] = {
    TrickReason.INVALID_PLAYER_COUNT: _C.INVALID_ARGUMENT,
    TrickReason.BID_CARD_COUNT: _C.INVALID_ARGUMENT,
    TrickReason.INVALID_ACTION: _C.INVALID_ARGUMENT,
    TrickReason.UNKNOWN_GAME: _C.INVALID_ARGUMENT,
    TrickReason.WRONG_PHASE: _C.FAILED_PRECONDITION,
    TrickReason.MUST_FOLLOW_SUIT: _C.FAILED_PRECONDITION,
    TrickReason.BID_ALREADY_PLACED: _C.FAILED_PRECONDITION,
}


def from_trick_error(err: TrickError, domain: str = ENGINE_DOMAIN) -> ServiceError:
    """A trick-game refusal as a :class:`ServiceError` (its reason's status, both texts); its
    metadata names the game (``game: trick``)."""
    reason = err.reason
    status = REASON_STATUS[reason] if isinstance(reason, Reason) else TRICK_REASON_STATUS[reason]
    return ServiceError(
        status,
        reason.value,
        domain,
        metadata={**err.meta, "game": "trick"},
        message_ko=err.message("ko"),
        message_en=err.message("en"),
    )


def from_rule_error(err: RuleError, domain: str = ENGINE_DOMAIN) -> ServiceError:
    """Translate a rules-engine refusal into a :class:`ServiceError` using :data:`REASON_STATUS`."""
    return ServiceError(
        REASON_STATUS[err.reason],
        err.reason.value,
        domain,
        metadata=err.meta,
        message_ko=err.message("ko"),
        message_en=err.message("en"),
    )


def rule_texts(reason: str, metadata: Mapping[str, str]) -> tuple[str, str] | None:
    """The Korean and English texts of a rule ``reason`` with its ``metadata``; None for other reasons."""
    meta = dict(metadata)
    # A trick refusal says so (metadata game=trick): its INVALID_PLAYER_COUNT has its own text.
    if meta.get("game") == "trick" and reason in TrickReason.__members__:
        trick = TrickReason(reason)
        return trick_message(trick, meta, "ko"), trick_message(trick, meta, "en")
    if reason in Reason.__members__:
        rule = Reason(reason)
        return rule_message(rule, meta, "ko"), rule_message(rule, meta, "en")
    if reason in TrickReason.__members__:
        trick = TrickReason(reason)
        return trick_message(trick, meta, "ko"), trick_message(trick, meta, "en")
    return None


def from_rpc_error(e: grpc.RpcError, *, default_domain: str) -> ServiceError:
    """A failed call to the engine or to a service passing its refusals on, as a :class:`ServiceError`.

    :func:`~ninetynine.common.errors.to_service_error` with :func:`rule_texts`: reason, domain and
    metadata kept, a rule reason's texts in both languages; without an ``ErrorInfo`` the reason is
    the status code's name in ``default_domain``.
    """
    return to_service_error(e, default_domain=default_domain, texts=rule_texts)
