"""The testing surface: what scripted clients on ``fakebroker.client`` share. Golden
generation (``fakebroker.script.golden``), the differential scenarios against the real
Kafka (``fakebroker.realkafka.differential``) and the conformance harness are its users.

- ``client``: ``ScriptedClient``, the group APIs' verbs (join, sync, heartbeat, leave,
  describe, list) over one connection; the golden ``Client`` and the differential
  ``Worker`` are its subclasses (how a request is sent, awaited and kept);
- ``requests``: the fields of the group APIs' requests at a version (one builder per API);
- ``recorded``: a connection that records what it exchanges in the one transcript format
  (``fakebroker.script.recorder``), the client's side of what the broker records.

It imports only the client, the codec and the recorder; the server never imports it.
"""
