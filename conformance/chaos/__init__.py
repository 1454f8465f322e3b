"""Chaos certification (issue #26): a seeded random schedule of operations and faults run
against N real workers of a target behind the fake broker (proxy mode, real Kafka), the
recorded history judged by the group invariants, safety and liveness, and a violating
schedule shrunk (hypothesis) to a minimal one written as a replayable scenario file.

``schedule`` (generate, read, write) and ``judge`` are pure functions over data; ``shrink``
drives hypothesis' shrinker over any ``violates(schedule)`` predicate; ``driver`` is the thin
shell that runs a schedule against real processes and returns the history."""
