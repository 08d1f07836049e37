"""Shared service library: logging, errors, gRPC server/client plumbing, metrics and config flags.

Modules: :mod:`.logging`, :mod:`.errors`, :mod:`.grpcserver`, :mod:`.grpcclient`,
:mod:`.interceptors`, :mod:`.context`, :mod:`.metrics`, :mod:`.config`.
"""
