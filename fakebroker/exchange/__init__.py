"""The exchange layer, below the server and scripting: the transcript format
(``transcript``), which response answers which request (``pairing``), and the one table of
the fields each API's exchange carries for analysis (``fields``)."""
