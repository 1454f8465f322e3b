"""ApiVersions (18): advertise exactly the APIs and versions this broker implements."""

from __future__ import annotations

from ...protocol import Struct
from ...protocol.error_codes import ErrorCode
from .context import BrokerContext

API_KEY = 18


def response(ctx: BrokerContext, error: int = ErrorCode.NONE) -> Struct:
    mt = ctx.registry.response(API_KEY)
    entry = mt.cls.ApiVersion
    keys = [entry(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(ctx.supported.items())]
    return mt.new(error_code=error, api_keys=keys)


def handle(ctx: BrokerContext, request: Struct, version: int) -> Struct:
    return response(ctx)
