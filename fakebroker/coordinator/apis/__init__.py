"""One module per API the coordinator answers, each with one ``handle(coordinator, ctx,
body, prepared)``: it answers through the coordinator's outbox (``coordinator.env.reply``),
now or, for a parked request, later. ``prepared`` is what the API's preparer (if any) built
from the request alone, off the event loop for a big frame; None means build it here.

The table from API to handler is ``coordinator/dispatch.py``, which imports these modules
(this package imports none of them, so no handler imports its own table back). A handler
knows the coordinator as ``view.CoordinatorView``, never by importing it.
"""
