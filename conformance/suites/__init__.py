"""The suites: ``coordinator`` (the suite plays the workers) and ``worker`` (the fake broker
plays the coordinator, with scripted peers). Each module registers cases by requirement id."""
