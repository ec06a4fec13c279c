"""Backfill variants (DESIGN.md §3.7): the :class:`Backfill` contract, the :data:`BACKFILLS`
registry and the built-ins, one concern per module:

* :mod:`.base` — the ABC, its options base class and the registry;
* :mod:`.simple` — ``none`` and ``firstfit``;
* :mod:`.easy` — ``easy`` (one reservation, for the queue head);
* :mod:`.conservative` — ``conservative`` (a reservation for every queued job);
* :mod:`.windows` — ``windows`` (a site's clock rules: synchronization points, caps by the
  hour, around any of the above).

Importing this package registers the built-ins. Installed plug-ins (entry-point group
``twinsweep.backfill``) are listed by ``BACKFILLS.names()`` and loaded on first use.
"""

from .base import BACKFILLS, Backfill, BackfillOptions
from .simple import FirstFit, NoBackfill
from .easy import Easy
from .conservative import Conservative
from .windows import Windows, WindowsOptions

#: The built-in variants in DESIGN.md §3.7 order (from no backfill to reservations for all).
BUILTIN_BACKFILLS = ("none", "firstfit", "easy", "conservative")

__all__ = ["BUILTIN_BACKFILLS", "BACKFILLS", "Backfill", "BackfillOptions", "NoBackfill", "FirstFit", "Easy", "Conservative", "Windows",
           "WindowsOptions"]
