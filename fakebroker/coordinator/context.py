"""What a request carries besides its body, and what the coordinator hands back."""

from __future__ import annotations

from dataclasses import dataclass

from ..protocol import Struct


@dataclass(frozen=True)
class RequestContext:
    """One request as the coordinator sees it.

    ``request_id`` is the caller's handle: a reply names it, possibly much later (a parked
    JoinGroup). ``client_host`` is the peer address; Kafka reports it in DescribeGroups in
    ``InetAddress.toString()`` form ("/127.0.0.1"), see ``kafka_client_host``.
    """

    request_id: int
    api_key: int
    api_version: int
    client_id: str
    client_host: str

    @property
    def kafka_client_host(self) -> str:
        # Kafka stores InetAddress.toString(): "hostname/address", here without a hostname.
        return self.client_host if "/" in self.client_host else "/" + self.client_host


@dataclass(frozen=True)
class Reply:
    """The response to the request ``request_id``: a response object of the matching type,
    built for that request's version."""

    request_id: int
    body: Struct
