"""How a batch of runs executes (DESIGN.md §1, §6): the :class:`~.base.Backend` interface and the
backend registry :data:`~.base.BACKENDS`, with the built-in backends registered here:

==========  ==================================================================================
``local``   in-process, or a process pool with ``workers`` > 1 (:mod:`.local`)
``ray``     one twin actor per worker, datasets shared through the object store (:mod:`.ray_backend`)
``slurm``   job arrays through submitit (:mod:`.slurm`)
==========  ==================================================================================

A backend never imports ``twinsweep.sweep``: it runs whatever run function it is handed.
"""

from .base import BACKENDS, Backend, Outcome, RunFn, Task, make_backend, register_backend
from . import local as _local  # noqa: F401  (registers "local")
from . import ray_backend as _ray_backend  # noqa: F401  (registers "ray")
from . import slurm as _slurm  # noqa: F401  (registers "slurm")

__all__ = ["BACKENDS", "Backend", "Outcome", "RunFn", "Task", "make_backend", "register_backend"]
