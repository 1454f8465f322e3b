"""Apache Kafka Connect's distributed worker as a local process: a bundled worker target.

The worker's jars come from Maven Central once (``python -m fakebroker.realconnect
resolve``, run by .ci/setup.sh); ``ConnectWorker`` runs ``ConnectDistributed`` against a
fake broker in proxy mode in front of a real Kafka (``fakebroker.realkafka``).
"""

from .provision import CONNECT_VERSION, cached_libs, ensure_resolved
from .worker import PROTOCOLS, ConnectWorker, WorkerFailed, WorkerSettings

__all__ = ["CONNECT_VERSION", "PROTOCOLS", "ConnectWorker", "WorkerFailed", "WorkerSettings",
           "cached_libs", "ensure_resolved"]
