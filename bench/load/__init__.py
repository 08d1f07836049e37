"""Load generator for the whole stack (issue 7): WebSocket players through the gateway.

``python -m bench.load --players 400 --duration 60 [--ramp 20] [--json out.json]`` starts the
engine, session and gateway as child processes, opens that many WebSocket clients from this
(separate) process, seats them 4 to a room and plays realistically, printing one line per
second and a summary; ``python -m bench.load.ladder`` (``make bench-load``) runs a ladder of
sizes and prints the capacity table and the curve. See docs/performance.md, "Capacity".
"""
