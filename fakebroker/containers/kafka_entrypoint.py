"""The local Kafka image's entry point (runs inside the container, Python 3 standard library
only): configured as the ``apache/kafka`` image documents. Every ``KAFKA_*`` environment
variable but the JVM's is a server property (``KAFKA_`` dropped; ``___`` -> ``-``, ``__`` ->
``_``, ``_`` -> ``.``; lower case); ``CLUSTER_ID`` formats the storage once (a restart of the
container keeps its data). With no property given, the image's documented defaults: a
single-node broker and controller on 9092/9093, advertised as localhost:9092."""

import os
import re
import subprocess
import sys

JVM_VARS = {"KAFKA_HEAP_OPTS", "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_OPTS", "KAFKA_LOG4J_OPTS",
            "KAFKA_GC_LOG_OPTS", "KAFKA_JMX_OPTS", "KAFKA_DEBUG"}
DEFAULT_CLUSTER_ID = "5L6g3nShT-eMCtK--X86sw"
DEFAULTS = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.quorum.voters": "1@localhost:9093",
    "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
    "advertised.listeners": "PLAINTEXT://localhost:9092",
    "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
}
SEPARATORS = {"___": "-", "__": "_", "_": "."}
PROPERTIES = "/tmp/server.properties"


def property_name(var: str) -> str:
    return re.sub("___|__|_", lambda m: SEPARATORS[m.group()], var[len("KAFKA_"):]).lower()


def properties(env: dict) -> dict:
    given = {property_name(k): v for k, v in env.items() if k.startswith("KAFKA_") and k not in JVM_VARS}
    props = dict(given or DEFAULTS)
    props.setdefault("log.dirs", "/tmp/kraft-combined-logs")
    return props


def main() -> None:
    env = dict(os.environ)
    with open(PROPERTIES, "w") as fh:
        fh.writelines(f"{k}={v}\n" for k, v in properties(env).items())
    jvm = ["java", *env.get("KAFKA_HEAP_OPTS", "-Xmx1G -Xms1G").split(),
           *env.get("KAFKA_JVM_PERFORMANCE_OPTS", "-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 "
                    "-XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent "
                    "-Djava.awt.headless=true").split(),
           "-Dlog4j2.configurationFile=/opt/kafka/log4j2.properties",
           *env.get("KAFKA_OPTS", "").split(), "-cp", "/opt/kafka/libs/*"]
    fmt = subprocess.run([*jvm, "kafka.tools.StorageTool", "format", "-t",
                          env.get("CLUSTER_ID", DEFAULT_CLUSTER_ID), "-c", PROPERTIES, "--ignore-formatted"])
    if fmt.returncode != 0:
        sys.exit(f"formatting the storage failed (exit {fmt.returncode})")
    os.execvp("java", [*jvm, "kafka.Kafka", PROPERTIES])


if __name__ == "__main__":
    main()
