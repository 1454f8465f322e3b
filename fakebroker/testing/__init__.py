"""The testing surface: the one scripted-client layer on ``fakebroker.client``. Golden
generation (``conformance golden``), the differential scenarios against the real
Kafka (``fakebroker.realkafka.differential``) and the conformance harness
(``conformance.harness.context``) are its users; each subclasses ``ScriptedSession`` for its
policy and keeps only what is its own (a transcript, a comparison, a case's evidence).

- ``session``: ``ScriptedSession``, the clients of one script on one broker, its group ids,
  and what is done around each request (kept, settled, awaited; a missing answer); each
  client's connection starts with ApiVersions and its requests go out at the highest
  version both sides support within the script's needs (``fakebroker.negotiation``);
- ``client``: ``ScriptedClient``, the group APIs' verbs over one connection, and
  ``Pending``, a request sent and not yet awaited;
- ``member``: ``ScriptedMember``, a classic member that remembers what the coordinator told
  it (id, generation, leader, protocol);
- ``requests``: the fields of the group APIs' requests at a version (one builder per API);
- ``reconcile_sim``: members of a KIP-848 group driving the sans-IO reconciliation engine
  directly on a virtual clock (no wire), for the engine's tests and ``bench/reconcile.py``.

It imports only the client, the codec and (``reconcile_sim``) the engine; the server never
imports it.
"""
