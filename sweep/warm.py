"""Importing this module warms the run path of the importing process (:func:`sweep.runner.warm_up`).

It exists for the local pool's forkserver (``backends.local.PRELOAD``), which can only import
modules by name before it forks the workers: importing this one there runs the tiny warm-up
simulation once, so that no worker pays the first-run imports and numba cache loads itself.
Nothing else imports it. :data:`WARM_CPU_S`: the CPU seconds the warm-up took (-1.0 if it failed).
"""

from __future__ import annotations

from .runner import warm_up

#: CPU seconds of the warm-up run at import (-1.0 when it failed; the process is then only cold).
WARM_CPU_S = warm_up()
