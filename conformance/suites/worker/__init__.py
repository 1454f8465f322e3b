"""Worker suite: the fake broker is the coordinator, scripted peers share the group, and the
cases observe what the worker under test sends next, and when."""
