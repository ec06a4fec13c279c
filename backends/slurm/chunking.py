"""How tasks are grouped into array tasks (chunks) and chunks into arrays within the cluster's
``MaxArraySize`` (package :mod:`backends.slurm`)."""

from __future__ import annotations


def plan_chunks(n_tasks: int, runs_per_task: int | None = None, parallelism: int | None = None,
                max_array_size: int = 1001) -> list[tuple[int, int]]:
    """Split ``n_tasks`` tasks into chunks; returns ``[(start, stop), ...]`` index ranges.

    With ``runs_per_task``: chunks of exactly that many (the last may be smaller). Otherwise the
    tasks are split evenly (sizes differ by at most one) into ``min(n_tasks, max_array_size,
    2 x parallelism)`` chunks (64 instead of 2 x parallelism when there is no cap), so the default
    fits one array.
    """
    if n_tasks <= 0:
        return []
    if runs_per_task:
        return [(i, min(i + runs_per_task, n_tasks)) for i in range(0, n_tasks, runs_per_task)]
    k = max(1, min(n_tasks, max_array_size, 2 * parallelism if parallelism else 64))
    base, extra = divmod(n_tasks, k)
    out, start = [], 0
    for i in range(k):
        stop = start + base + (1 if i < extra else 0)
        out.append((start, stop))
        start = stop
    return out


def split_arrays(n_chunks: int, max_array_size: int) -> list[tuple[int, int]]:
    """Chunks -> arrays of at most ``max_array_size`` tasks: ``[(first_chunk, count), ...]``."""
    if max_array_size < 1:
        raise ValueError("max_array_size must be >= 1")
    return [(i, min(max_array_size, n_chunks - i)) for i in range(0, n_chunks, max_array_size)]
