"""Apache Kafka Connect's distributed worker as a local process: a bundled worker target.

The worker's jars come from Maven Central once (``python -m fakebroker.realconnect
resolve``, run by .ci/setup.sh); ``ConnectWorker`` runs ``ConnectDistributed`` against a
fake broker in proxy mode in front of a real Kafka (``fakebroker.realkafka``).
"""

from .provision import CONNECT_VERSION, ConnectBuild, cached_libs, connect_build, ensure_resolved
from .worker import PROTOCOLS, ConnectWorker, WorkerFailed, WorkerSettings

__all__ = ["CONNECT_VERSION", "PROTOCOLS", "ConnectBuild", "ConnectWorker", "WorkerFailed", "WorkerSettings",
           "cached_libs", "connect_build", "ensure_resolved"]
