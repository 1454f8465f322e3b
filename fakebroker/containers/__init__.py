"""Containers without a registry: the Docker engine (bounded pings, the project's labels and
clean-up in place of testcontainers' reaper), images the project builds itself from Debian
packages and Maven jars (``images``), and the fake broker as a testcontainers module
(``fakebroker_container.FakeBrokerContainer``).

Every container started here runs on the host's network bound to 127.0.0.1 (engines here
run without a bridge: ``dockerd --bridge=none --iptables=false``) and carries the label
``connect-conformance.owner=<pid>``, so what a process leaves behind is found and removed
(at its exit, and by ``python -m fakebroker.containers cleanup``).
"""
