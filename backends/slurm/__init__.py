"""``slurm`` backend: tasks run as Slurm job arrays submitted through submitit.

How a batch of tasks executes
-----------------------------
- **Chunks.** The tasks are grouped into chunks (``runs_per_task`` tasks each; by default the
  tasks are split evenly into ``min(tasks, MaxArraySize, 2 x parallelism)`` chunks, 64 without a
  parallelism cap) and each chunk is one array task. A chunk runs its tasks one after the other
  in-process, with :func:`backends.base.call_safely`, and writes one *outcome file* per task
  (``<folder>/<submission>/out/<key>.json``, JSON written atomically: the driver and ``twinsweep
  status`` read it without unpickling anything; the run function's result must be JSON-ready) as
  soon as that task ends. A chunk that fails outside its tasks writes ``errors/<slurm id>.json``. The run
  function itself writes its outputs (the sweep's ``runs/<key>/``) on the shared filesystem.
- **Shared objects** (e.g. a dataset's (Workload, System)) are pickled once per submission into
  ``<submission>/shared/`` and loaded by a chunk the first time one of its tasks needs them.
- **Arrays.** A Slurm array holds at most ``MaxArraySize`` tasks (read from ``scontrol show
  config``; the ``max_array_size`` option can only lower it), so more chunks are split over
  several arrays. ``array_parallelism`` (default: ``workers``) caps the array tasks running at
  once (``--array=0-N%P``); when the chunks span several arrays, each array then waits for the
  previous one (``--dependency=afterany``) so that the cap holds for the whole batch.
- **Following.** The driver watches the outcome files (yielding an :class:`Outcome` per task as
  it lands) and polls ``squeue`` every ``poll_s`` seconds. An array task that has left the queue
  (completed, cancelled, failed, timed out, or purged) with tasks that never wrote an outcome
  turns each of them into a failed Outcome naming the array task, its state and its log file.
  Accounting (``sacct``) is not needed.
- **Requeue.** Chunks are checkpointable: when Slurm signals a timeout or a preemption
  (``--signal=USR2@signal_delay_s``) submitit requeues the array task (at most ``max_requeues``
  timeouts), and a task requeued by Slurm itself (``--requeue``; preemption with
  ``PreemptMode=REQUEUE``, node failure) restarts the same way. A restarted chunk skips the tasks
  that already wrote their outcome, so it resumes with only what is missing. A chunk that times
  out without finishing a task in that attempt is not requeued: its unfinished tasks get a failed
  Outcome naming the time limit (``SlurmTimeLimit: ...``), and each timeout is recorded in
  ``<submission>/timeouts/<slurm id>.json`` (:class:`.task.ChunkRunner`). The run function is
  idempotent on the sweep's side (a run directory that exists is not recomputed).
- **Adoption.** Before submitting, the backend looks at the earlier submissions in ``folder``:
  tasks that a still-pending or running array task of an earlier submission (e.g. a ``--detach``
  sweep) will run are followed instead of being submitted again (a task ``COMPLETING``, which
  may be ending or being requeued, is waited for up to a minute; one still completing then counts
  as ended). ``submission.json`` is written before the first ``sbatch`` and extended after each
  array, so the arrays of a driver killed mid-submission are adopted; an array queued from a
  submission folder but recorded nowhere (the driver died between ``sbatch`` and the record) is
  cancelled when that driver is gone. With a parallelism cap, new arrays wait (``afterany``) for
  the adopted ones.
- **Other backends.** While array tasks of a submission in a sweep's folder are queued or running
  with runs to do, ``local``, ``ray`` (any backend but this one) refuse to start that sweep,
  naming the arrays, the runs they hold and what to do (wait or follow them with this backend, or
  ``scancel`` them to take their runs over); when ``squeue`` cannot be asked they refuse as well,
  saying so (``TWINSWEEP_ASSUME_JOBS_ENDED=1`` takes such arrays as over):
  :meth:`SlurmBackend.queued_work` (:func:`.status.held_runs`) read by
  :func:`backends.base.refuse_queued_work`.
- **Stopping.** Closing :meth:`SlurmBackend.run` early (Ctrl-C, generator closed) cancels
  (``scancel``) the arrays that call submitted; arrays of earlier submissions it only followed
  keep running. :meth:`SlurmBackend.submit` submits without following (``twinsweep sweep --detach``).

Modules, one concern each: :mod:`.options` (option forms, time limits), :mod:`.chunking` (tasks
into chunks, chunks into arrays), :mod:`.cluster` (sinfo / scontrol / squeue / scancel, job
states), :mod:`.task` (what one array task runs), :mod:`.backend` (:class:`SlurmBackend`) and
:mod:`.status` (a folder's progress from its files).

Options are checked before anything is submitted (:func:`parse_options` for their form, and
:meth:`SlurmBackend.validate` against the cluster: known partition, time limit within the
partition's ``MaxTime``, and ``sbatch --test-only`` with the very same options), and every problem is
a :class:`core.errors.ConfigError` naming the option. The array tasks run the driver's Python
(``sys.executable``; ``python`` option to change it), so the project and its virtual environment
must be on a filesystem the compute nodes share, and so must ``folder``.

Folder layout (``folder``; the sweep uses ``<results>/slurm``)::

    <submission>/submission.json   arrays, chunks (slurm id, keys, log paths), options
    <submission>/shared/*.pkl      shared objects (removed when a followed submission is complete)
    <submission>/out/<key>.json    one Outcome per finished task (JSON)
    <submission>/errors/<id>.json  what an array task raised outside its tasks (JSON)
    <submission>/timeouts/<id>.json  an array task that reached its time limit (requeued or not)
    <submission>/logs/             submitit's sbatch scripts, pickles and logs (<job>_<task>_0_log.err)
"""

from __future__ import annotations

from .options import OPTION_KEYS, parse_options, parse_sbatch_items, parse_time  # noqa: F401
from .chunking import plan_chunks, split_arrays  # noqa: F401
from .cluster import (ACTIVE_STATES, SlurmError, TERMINAL_STATES, UNSETTLED_STATES, _limit_minutes, cancel,
                      cluster_max_array_size, cluster_partitions, query_states, slurm_ready)  # noqa: F401
from .task import ChunkRunner  # noqa: F401
from .backend import SlurmBackend  # noqa: F401
from .status import folder_status, held_runs, load_submissions  # noqa: F401

__all__ = ["SlurmBackend", "SlurmError", "parse_options", "parse_time", "parse_sbatch_items", "plan_chunks",
           "split_arrays", "cluster_partitions", "cluster_max_array_size", "query_states", "folder_status", "held_runs",
           "slurm_ready", "OPTION_KEYS"]
