"""Interception: what the broker's request pipeline offers its clients to act on a request
or a response (hooks, the error answers they build, the field paths and matchers they test
on) and the recording interface it reports frames to. Below ``fakebroker.server`` so the
server depends on it, never on the scripting layer above."""
