"""The fake broker image's HEALTHCHECK: healthy (exit 0) when the broker on
``$FAKEBROKER_PORT`` answers an ApiVersions request, in plaintext or, failing that, over TLS
(certificate not checked: this only asks whether it serves). Standard library only."""

from __future__ import annotations

import os
import socket
import ssl
import struct
import sys

# ApiVersions v0, correlation id 7, no client id: every Kafka version answers it, also
# before SASL authentication.
CORRELATION_ID = 7
REQUEST = struct.pack(">ihhih", 10, 18, 0, CORRELATION_ID, -1)


def answers(host: str, port: int, tls: bool, timeout_s: float = 2.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as raw:
            s: socket.socket = raw
            if tls:
                ctx = ssl.create_default_context()
                ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
                s = ctx.wrap_socket(raw)
            s.sendall(REQUEST)
            head = b""
            while len(head) < 8:
                chunk = s.recv(8 - len(head))
                if not chunk:
                    return False
                head += chunk
    except (OSError, ssl.SSLError):
        return False
    return struct.unpack(">ii", head)[1] == CORRELATION_ID


def main() -> int:
    bound = os.environ.get("FAKEBROKER_HOST", "127.0.0.1")
    host = "127.0.0.1" if bound in ("0.0.0.0", "", "::") else bound
    port = int(os.environ.get("FAKEBROKER_PORT", "9092"))
    return 0 if answers(host, port, tls=False) or answers(host, port, tls=True) else 1


if __name__ == "__main__":
    sys.exit(main())
