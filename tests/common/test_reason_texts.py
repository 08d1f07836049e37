"""Every reason a service of ours can send has its Korean and its English text in the one table of
service texts (rule reasons keep theirs with the rules), and failed calls are converted with the
rules' texts wherever they are converted.

The reasons a service sends are read from its source: the literal (or module-constant) reason of
every call that builds or sends a refusal, the session's status table and the service-credential
reasons. A new refusal without texts, or texts nobody sends, fails here.
"""

from __future__ import annotations

import ast
import re
import string
from pathlib import Path

import ninetynine
from ninetynine.common import interceptors
from ninetynine.common.reasons import SERVICE_TEXTS, service_text, service_texts
from ninetynine.engine.rules import Reason
from ninetynine.session.errors import STATUS

PACKAGE = Path(ninetynine.__file__).parent
SERVICES = ("common", "engine", "session", "gateway")
# Callables whose argument at this position is the reason of the refusal they build or send.
REASON_ARGUMENT = {
    "session_error": 0,
    "_stream_error": 0,
    "send_error": 0,
    "error_message": 0,
    "service_text": 0,
    "ProtocolError": 0,
    "Refusal": 0,
    "ServiceError": 1,
}
HANGUL = re.compile("[\uac00-\ud7a3]")


def _sources() -> list[Path]:
    return [
        path
        for service in SERVICES
        for path in sorted((PACKAGE / service).rglob("*.py"))
        if "v1" not in path.relative_to(PACKAGE).parts
    ]


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _sent_reasons() -> dict[str, str]:
    """reason -> the first place in the services' source that sends it."""
    found: dict[str, str] = {}
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        constants = {
            target.id: node.value.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or _callee(node) not in REASON_ARGUMENT:
                continue
            index = REASON_ARGUMENT[_callee(node)]
            arg = node.args[index] if len(node.args) > index else None
            arg = next((k.value for k in node.keywords if k.arg == "reason"), arg)
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                reason = arg.value
            elif isinstance(arg, ast.Name) and arg.id in constants:
                reason = constants[arg.id]
            else:
                continue  # a reason passed on (a refusal's, a rule's): checked where it is made
            found.setdefault(reason, f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    # Returned by the credential check and built by each service's own table.
    for reason in (interceptors.CREDENTIAL_REQUIRED, interceptors.CREDENTIAL_INVALID):
        found.setdefault(reason, "ninetynine/common/interceptors.py")
    for reason in STATUS:
        found.setdefault(reason, "ninetynine/session/errors.py")
    return found


def test_every_reason_a_service_sends_has_a_korean_and_an_english_text() -> None:
    sent = _sent_reasons()
    # The scan sees each kind of sender: the gateway's frames and budgets, the session, every service.
    assert {"NOT_IN_ROOM", "RATE_LIMITED", "TOO_MANY_ROOMS", "UNKNOWN_TYPE", "ROOM_FULL"} <= set(sent)
    assert {"MALFORMED_REQUEST", "SERVICE_CREDENTIAL_REQUIRED", "INTERNAL", "UNAVAILABLE"} <= set(sent)
    rules = set(Reason.__members__)
    missing = {reason: where for reason, where in sent.items() if reason not in set(SERVICE_TEXTS) | rules}
    assert missing == {}
    for reason in set(sent) - rules:
        ko, en = SERVICE_TEXTS[reason]
        assert HANGUL.search(ko), f"{reason}: the Korean text is not Korean: {ko!r}"
        assert en and not HANGUL.search(en), f"{reason}: the English text is not English: {en!r}"


def test_the_table_holds_service_reasons_only_each_sent_somewhere() -> None:
    shadowed = set(SERVICE_TEXTS) & set(Reason.__members__)
    assert shadowed == set(), "rule reasons keep their texts with the rules"
    assert set(SERVICE_TEXTS) - set(_sent_reasons()) == set(), "texts no service sends"


def test_both_texts_take_the_same_metadata() -> None:
    def fields(text: str) -> set[str]:
        return {name for _, name, _, _ in string.Formatter().parse(text) if name}

    for reason, (ko, en) in SERVICE_TEXTS.items():
        assert fields(ko) == fields(en), reason
    assert service_text("TOO_MANY_ROOMS", "en", {"limit": "3/min"}) == (
        "Too many rooms created from your address (limit 3/min); try again later"
    )
    assert service_text("MESSAGE_TOO_LARGE", "ko", {}) == "메시지가 너무 커요 (최대 {limit}바이트)"
    assert service_texts("OVER_99", {}) is None


def test_failed_calls_are_converted_with_the_rule_texts_everywhere() -> None:
    """``to_service_error`` is called only by ``ninetynine.engine.errors.from_rpc_error``, which always
    hands it the rules' texts: no caller can convert a rule refusal and lose its other language."""
    direct = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "engine" / "errors.py" or path == PACKAGE / "common" / "errors.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        direct += [
            f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and _callee(node) == "to_service_error"
        ]
    assert direct == []


_DOC_ROW = re.compile(r"^\| `([A-Z][A-Z0-9_]+)` \| [^|]+ \| ([^|]+) \| ([^|]+) \|$", re.MULTILINE)


def test_the_documented_texts_are_the_ones_sent() -> None:
    """docs/client-protocol.md §5 lists reasons with their texts: they are the table's (the English
    column may add a note on the metadata after the text)."""
    doc = (PACKAGE.parent / "docs" / "client-protocol.md").read_text(encoding="utf-8")
    rows = {reason: (ko.strip(), en.strip()) for reason, ko, en in _DOC_ROW.findall(doc)}
    assert {"NOT_IN_ROOM", "ROOM_FULL", "VIEW_OUTDATED", "UNAVAILABLE"} <= set(rows)
    for reason, (ko, en) in rows.items():
        assert reason in SERVICE_TEXTS, f"the docs list {reason}, which no service sends"
        assert ko == SERVICE_TEXTS[reason][0], reason
        assert en.startswith(SERVICE_TEXTS[reason][1]), reason
