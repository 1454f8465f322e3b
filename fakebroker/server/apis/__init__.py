"""The broker-side APIs (everything that is not a group API), one module each.

Each module exposes ``API_KEY`` and ``handle(ctx, request, version)`` returning the
response body; ``fetch`` is a coroutine because a Fetch waits up to its max wait.
"""

from . import api_versions, describe_cluster, fetch, find_coordinator, list_offsets, metadata

HANDLERS = {m.API_KEY: m for m in (api_versions, metadata, find_coordinator, list_offsets,
                                   fetch, describe_cluster)}
