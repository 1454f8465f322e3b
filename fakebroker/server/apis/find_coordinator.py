"""FindCoordinator (10): this broker coordinates every group (single and batched forms)."""

from __future__ import annotations

from typing import Any

from ...protocol.error_codes import ErrorCode
from .context import BrokerContext

API_KEY = 10


def handle(ctx: BrokerContext, request: Any, version: int) -> Any:
    mt = ctx.registry.response(API_KEY)
    node, host, port = ctx.config.node_id, ctx.host, ctx.port
    if version < 4:
        if version >= 1 and request.key_type not in (0, 1):
            return mt.new(error_code=ErrorCode.INVALID_REQUEST, error_message="unknown key type",
                          node_id=-1, host="", port=-1)
        return mt.new(error_code=0, error_message=None, node_id=node, host=host, port=port)
    entry = mt.cls.Coordinator
    return mt.new(coordinators=[entry(key=k, node_id=node, host=host, port=port, error_code=0,
                                      error_message=None)
                                for k in request.coordinator_keys])
