"""DescribeCluster (60): one broker, which is also the controller."""

from __future__ import annotations

from typing import Any

from .context import BrokerContext

API_KEY = 60


def handle(ctx: BrokerContext, request: Any, version: int) -> Any:
    mt = ctx.registry.response(API_KEY)
    broker = mt.cls.DescribeClusterBroker(broker_id=ctx.config.node_id, host=ctx.host,
                                          port=ctx.port, rack=None)
    return mt.new(error_code=0, error_message=None, cluster_id=ctx.config.cluster_id,
                  controller_id=ctx.config.node_id, brokers=[broker],
                  endpoint_type=getattr(request, "endpoint_type", 1))
