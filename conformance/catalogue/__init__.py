"""The catalogue: what is required (``requirements``: every requirement of
``schemas/requirements.json``, by id, with its level, sources and cases) and the audit page
rendered from it (``audit``). The lowest layer of the suite: it imports nothing of it."""
