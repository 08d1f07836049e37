"""Coverage-guided fuzzing (atheris, libFuzzer) of the parsers that read untrusted bytes, in-process.

The hypothesis tests (``tests/security``, ``tests/engine/test_service_fuzz.py``,
``tests/session/test_session_fuzz.py``) draw inputs from the schema and the descriptors through
running servers; these harnesses call the parsing code directly, thousands of times a second, and
let libFuzzer's coverage feedback grow inputs that reach new branches (a byte at a time, with the
comparison operands the code made) where a generator would have to guess them.

One module per target, each with ``TestOneInput(data: bytes)`` that raises only when the target
broke its contract (anything but the documented refusal, or an invariant violated), plus
``seeds()`` (a starting corpus), ``DICTIONARY`` (tokens for libFuzzer's ``-dict``), ``ARGS``
(default libFuzzer flags) and, where inputs are protobuf messages, a structure-aware
``custom_mutator``:

* ``gateway`` — a WebSocket text frame or a gRPC ``ConnectRequest`` becoming a ``ClientMessage``
  or a ``ProtocolError`` (``ninetynine/gateway/protocol.py``, ``server._parse_grpc``), and the
  refusal rendered as the connection sends it.
* ``engine`` — ``Setup``/``Apply``/``View``/``Timeout`` requests parsed from the bytes and answered
  by ``EngineHandlers`` (what ``LocalEngine`` and the engine server run): a response or a
  ``ServiceError``; the request is left unchanged; a state the engine returns is one it accepts.
* ``session`` — every ``SessionService`` request through the session's lenient deserializer, then
  the pure parsers of its client-supplied strings (tokens, page tokens, room ids, languages,
  request ids) and the room document a ``CreateRoom``/``JoinRoom``/``AddBot`` builds.
* ``planted`` — a toy parser with a planted bug, so the tests can show a harness does fail.

Run one with ``python -m tests.fuzz <target> [libFuzzer flags]`` (``make fuzz`` runs them all for
``FUZZ_SECONDS`` each). This package itself imports nothing from atheris or the services, so pytest
can collect ``test_atheris.py`` (skipped without atheris) without instrumenting anything.
"""

from __future__ import annotations

TARGETS = ("gateway", "engine", "session", "planted")
