"""The machinery cases run on: outcomes, clocks, recorded connections, scripted members,
the case registry and the runner. Suites (``conformance.suites``) only use this package."""
