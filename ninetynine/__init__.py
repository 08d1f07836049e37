"""ninety-nine: the rules engine, session and gateway services of the adding card game 구십구.

Hand-written service code lives in ``common``, ``engine``, ``session`` and ``gateway``; each
service's versioned API (``engine/v1`` ...) is generated from ``protos/`` by
``scripts/gen_protos.py``.
"""
