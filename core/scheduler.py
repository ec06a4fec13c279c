"""Schedulers (DESIGN.md §3.6–3.7): a queue policy plus a backfill variant, or a trace replay.

The engine talks to a scheduler through these calls::

    submit(job: int, now: int) -> int | None   # optional wake-up time (s, > now)
    schedule(now: int, cluster: Cluster) -> int | None   # starts jobs with cluster.start(job[, nodes]);
                                                         # optional wake-up time (s, > now)
    cancel(job: int, now: int) -> bool         # a queued job leaves the queue without starting
                                               # (cancelled by its user); False if it is not queued
    queued() -> int
    queue() -> list[int]

and, optionally, ``job_ended(job, now)`` (told of each end before the next pass),
``job_prepopulated(job, start)`` (a job running at the window start, placed by the engine),
``nodes_down(count, until, now)`` / ``nodes_up(count, until, now)`` (availability holds taken /
given back),
``finish(now)`` (the run is over) and ``close()`` (release resources, even after an error); the
external scheduler (:mod:`core.external`) uses them. Between two passes the queue may lose jobs
that did not start (cancellations): :meth:`Policy.on_remove` / :meth:`Backfill.on_remove` tell
a plug-in that keeps state.

:class:`QueueScheduler` keeps one queue ordered by a :class:`~twinsweep.core.policies.Policy`'s
key, ties broken by ``(submit_time, trace_index)``, and at each pass starts the jobs its
:class:`~twinsweep.core.backfill.Backfill` variant selects. Both are plug-ins of the one registry
mechanism (:data:`core.policies.POLICIES`, :data:`core.backfill.BACKFILLS`; entry-point groups
``twinsweep.policies`` and ``twinsweep.backfill``), see docs/plugins.md. Neither sees a run
time: they read a :class:`~twinsweep.core.jobview.JobView`.

:func:`validate_scheduler` checks names and options of a policy/backfill pair without running
anything (spec loading calls it for every grid point); :func:`make_scheduler` builds the
scheduler of a run.
"""

from __future__ import annotations

import bisect
import dataclasses
import operator
from typing import Any, Mapping, Sequence

from .backfill import BACKFILLS, Backfill
from .errors import ConfigError, PluginError, UnknownNameError
from .jobview import JobView, SchedulerContext
from .options import PluginOptions, RunOptions, option_names, parse_options
from .policies import POLICIES, Policy
from .policies.base import key_problem
from .registry import PASSED_THROUGH, plugin_raised
from .resources import Cluster

__all__ = ["QueueScheduler", "ReplayScheduler", "SchedulerSpec", "validate_scheduler", "make_scheduler",
           "available_policies", "available_backfills", "check_names", "REPLAY", "EXTERNAL", "JobView",
           "SchedulerContext", "PluginError", "plugin_raised"]

#: Classes of the policy keys known to be real numbers (:func:`~core.policies.base.key_problem`):
#: a key of one of them is only checked for NaN (``k != k``); a key of another class is checked
#: in full once, and its class joins the set when it is a real number (numpy's int64, float64).
_KEY_TYPES: set[type] = {int, float}

#: The policy name that replays recorded starts (not a queue policy: no backfill, no options).
REPLAY = "replay"
#: The policy name that hands every decision to an external scheduler over the protocol
#: (docs/protocol.md; the run's ``scheduler`` names it; backfill ``none``, no options).
EXTERNAL = "external"


def available_policies() -> list[str]:
    """Names accepted as ``policy``: every registered or installed policy, ``replay`` and ``external``."""
    return sorted(set(POLICIES.names()) | {REPLAY, EXTERNAL})


def available_backfills() -> list[str]:
    """Names accepted as ``backfill``: every registered or installed backfill variant."""
    return BACKFILLS.names()


@dataclasses.dataclass(frozen=True)
class SchedulerSpec:
    """A validated policy/backfill pair: the classes and their typed options.

    ``policy_cls`` / ``policy_options`` are None for ``replay``."""

    policy: str
    backfill: str
    policy_cls: type[Policy] | None
    backfill_cls: type[Backfill] | None
    policy_options: PluginOptions | None
    backfill_options: PluginOptions | None
    run_options: RunOptions


def _lookup(registry, kind: str, name: Any):
    if not isinstance(name, str):
        raise ConfigError(f"{kind}: expected a name, got {name!r}")
    extra = {REPLAY, EXTERNAL} if kind == "policy" else set()
    try:
        return registry.get(name)
    except UnknownNameError as exc:
        raise UnknownNameError(kind, name, sorted(set(exc.valid) | extra)) from None
    except ConfigError as exc:  # an installed or module:object plug-in that cannot be imported
        names = set(registry.names()) | extra
        if name in names:  # installed: the name is valid, its code does not load (exc says so)
            raise ConfigError(str(exc)) from None
        raise ConfigError(f"unknown {kind} {name!r} ({exc}); valid {kind} names: {', '.join(sorted(names))}") from None


def check_names(policy: str, backfill: str) -> None:
    """Raise UnknownNameError (listing the valid names) unless ``policy`` and ``backfill`` are
    valid; installed and ``module:object`` plug-ins are loaded (ConfigError if they cannot be)."""
    if policy not in (REPLAY, EXTERNAL):
        _lookup(POLICIES, "policy", policy)
    _lookup(BACKFILLS, "backfill", backfill)


def _run_options_only(policy: str, what: str, opts: Mapping[str, Any]) -> RunOptions:
    """The run options of a policy that is not a queue policy (``replay``, ``external``): any
    other key is a ConfigError saying the policy ``what`` no such option."""
    run_names = option_names(RunOptions)
    unknown = sorted(k for k in opts if k not in run_names)
    if unknown:
        raise ConfigError(f"policy {policy!r} {what} no option(s) {unknown}; "
                          f"valid options: {', '.join(sorted(run_names))}")
    return parse_options("policy", policy, RunOptions, opts)


def validate_scheduler(policy: str, backfill: str, options: Mapping[str, Any] | None = None) -> SchedulerSpec:
    """Check a policy, a backfill variant and the run's options without running anything.

    Each option key goes to the plug-in(s) declaring it (the policy's and the backfill's
    ``Options`` models; :class:`~twinsweep.core.options.RunOptions` keys are the run's and every
    policy's). Raises UnknownNameError (listing the valid names) for an unknown policy or backfill,
    ConfigError naming the option and the valid ones for an unknown option, a wrong type, NaN or
    inf, or ``replay_oversubscribe`` on a policy other than replay, and ConfigError when an
    installed or ``module:object`` plug-in cannot be imported.
    Returns a :class:`SchedulerSpec`. Called by :func:`core.run.simulate` before any work and by
    spec loading for every grid point.
    """
    opts = dict(options or {})
    bad_keys = [k for k in opts if not isinstance(k, str)]
    if bad_keys:
        raise ConfigError(f"options: keys must be strings, got {bad_keys!r}")
    private = sorted(k for k in opts if k.startswith("_"))
    if private:
        raise ConfigError(f"options: {private} are not options (policy data travels in the scheduler's "
                          "context, core.jobview.SchedulerContext)")
    bcls = _lookup(BACKFILLS, "backfill", backfill)
    if policy == EXTERNAL:
        run_opts = _run_options_only(policy, "hands every decision to the external scheduler and takes", opts)
        _replay_only(policy, run_opts)
        if backfill != "none":
            raise ConfigError(f"policy 'external' decides every start itself: backfill must be 'none', got "
                              f"{backfill!r} (the external scheduler does its own backfilling)")
        return SchedulerSpec(policy, backfill, None, bcls, None, None, run_opts)
    if policy == REPLAY:
        return SchedulerSpec(policy, backfill, None, bcls, None, None,
                             _run_options_only(policy, "replays recorded starts and takes", opts))
    pcls = _lookup(POLICIES, "policy", policy)
    p_names, b_names = option_names(pcls.Options), option_names(bcls.Options)
    unknown = sorted(k for k in opts if k not in p_names and k not in b_names)
    if unknown:
        valid = ", ".join(sorted(p_names | b_names)) or "none"
        raise ConfigError(f"policy {policy!r} with backfill {backfill!r}: "
                          f"{'; '.join(f'unknown option {k!r}' for k in unknown)}; valid options: {valid}")
    p_opts = parse_options("policy", policy, pcls.Options, {k: v for k, v in opts.items() if k in p_names})
    b_opts = parse_options("backfill", backfill, bcls.Options, {k: v for k, v in opts.items() if k in b_names})
    run_opts = parse_options("policy", policy, RunOptions,
                             {k: v for k, v in opts.items() if k in option_names(RunOptions)})
    _replay_only(policy, run_opts)
    return SchedulerSpec(policy, backfill, pcls, bcls, p_opts, b_opts, run_opts)


def _replay_only(policy: str, run_opts: RunOptions) -> None:
    """ConfigError for ``replay_oversubscribe`` on a policy that reschedules (it applies to replay
    only; a study grid runs the other policies with the axis's first value:
    :func:`sweep.gridcheck.repeats_a_run`)."""
    if run_opts.replay_oversubscribe:
        raise ConfigError(f"option replay_oversubscribe applies to policy 'replay' only, not {policy!r} (in a study "
                          "grid the other policies run with the axis's first value: give false first)")


class QueueScheduler:
    """Queue policy + backfill variant over one policy-ordered queue.

    Args: ``policy`` (a Policy), ``backfill`` (a Backfill; built on the same JobView).
    ``stats``: the backfill's counters, with ``reservation_delays`` (0 unless conservative).
    Raises :class:`~twinsweep.core.errors.PluginError` (a RuntimeError) naming the plug-in when
    the policy gives a key that is not a real number or is NaN, or the backfill variant's
    ``select`` returns something other than a list of distinct queued jobs that fit together, and
    when a policy's or variant's own code raises (:func:`plugin_raised`: the call, its job and
    simulated time, the exception and the line that raised it).
    """

    def __init__(self, policy: Policy, backfill: Backfill):
        if not isinstance(policy, Policy):
            raise TypeError(f"policy must be a Policy, got {type(policy).__name__}")
        if not isinstance(backfill, Backfill):
            raise TypeError(f"backfill must be a Backfill, got {type(backfill).__name__}")
        self.policy = policy
        self.backfill = backfill
        backfill.static_queue = not policy.dynamic
        self.jobs = policy.jobs
        self._k: dict[int, tuple] = {}  # queued job -> sort key (policy key, submit, trace_index, job)
        self._q: list[int] = []
        # hooks the policy overrides (the base class's are no-ops: skip the calls)
        cls = type(policy)
        self._observe = policy.observe if cls.observe is not Policy.observe else None
        self._on_start = policy.on_start if cls.on_start is not Policy.on_start else None
        bcls = type(backfill)
        self._next_wake = backfill.next_wake if bcls.next_wake is not Backfill.next_wake else None
        self._wake = None  # the last wake-up time handed to the engine (not handed twice)

    @property
    def stats(self) -> dict[str, int]:
        out = {"reservation_delays": 0}
        out.update(self.backfill.stats)
        return out

    # -- queue --------------------------------------------------------------------------------
    def _key(self, job, now=None):
        j = self.jobs
        try:
            k = self.policy.key(job) if now is None else self.policy.key_at(job, now)
        except PASSED_THROUGH:
            raise
        except Exception as exc:  # noqa: BLE001 - the policy's own failure, named
            raise self._raised(self._who("policy"), "key" if now is None else "key_at", job, now, exc) from exc
        if k.__class__ not in _KEY_TYPES or k != k:  # a class not known to be a real number, or NaN
            self._check_key(job, k, now)
        return (k, j.submit[job], j.trace_index[job], job)

    def _who(self, kind: str) -> str:
        """``"policy 'name'"`` / ``"backfill 'name'"``: the plug-in as errors name it."""
        obj = self.policy if kind == "policy" else self.backfill
        return f"{kind} {getattr(obj, 'name', None) or type(obj).__name__!r}"

    def _raised(self, who: str, method: str, job: int | None, now: int | None, exc: Exception) -> PluginError:
        """:func:`plugin_raised` for ``method`` called for ``job`` (None: for the queue) at ``now``
        (None: ``key(job)``, at submit), worded as the key checks word their calls:
        ``key_at(2, 20) for job c (trace_index 2)``, ``select at 20 s``."""
        if job is None:
            call = f"{method} at {now} s"
        else:
            args = str(job) if now is None else f"{job}, {now}"
            call = f"{method}({args}) for job {self.jobs.job_id[job]} (trace_index {self.jobs.trace_index[job]})"
        return plugin_raised(who, call, exc)

    def _hook(self, kind: str, method: str, fn, now: int, *args, job: int | None = None):
        """``fn(*args)`` (a policy's or backfill variant's hook), its own exceptions as
        :func:`plugin_raised` errors naming ``kind`` and ``method``."""
        try:
            return fn(*args)
        except PASSED_THROUGH:
            raise
        except Exception as exc:  # noqa: BLE001 - the plug-in's own failure, named
            raise self._raised(self._who(kind), method, job, now, exc) from exc

    def _check_key(self, job: int, k, now: int | None) -> None:
        """Raise PluginError naming the policy, the job and the key when ``k`` cannot be a sort
        key (:func:`~core.policies.base.key_problem`); else remember its class as a real number."""
        why = key_problem(k)
        if why is None:
            _KEY_TYPES.add(k.__class__)
            return
        call = f"key({job})" if now is None else f"key_at({job}, {now})"
        raise PluginError(f"policy {self.policy.name or type(self.policy).__name__!r}: {call} for job "
                          f"{self.jobs.job_id[job]} (trace_index {self.jobs.trace_index[job]}) returned {k!r}, "
                          f"which is {why}; a key must be a real number (int or float, ±inf allowed), lower first")

    def submit(self, job: int, now: int):
        k = self._k[job] = self._key(job, now if self.policy.dynamic else None)
        q = self._q
        if not q or self._k[q[-1]] < k:  # behind every queued job (keys are distinct: they end with the job)
            q.append(job)
        else:
            bisect.insort(q, job, key=self._k.__getitem__)
        return None

    def queued(self) -> int:
        return len(self._q)

    def queue(self) -> list[int]:
        return list(self._q)

    def cancel(self, job: int, now: int) -> bool:
        """Remove queued ``job`` (cancelled by its user); tells the policy and the backfill
        variant (``on_remove``). Returns False when the job is not queued."""
        if self._k.pop(job, None) is None:
            return False
        self._q.remove(job)
        self._hook("policy", "on_remove", self.policy.on_remove, now, job, now, job=job)
        self._hook("backfill", "on_remove", self.backfill.on_remove, now, job, now, job=job)
        return True

    def schedule(self, now: int, cluster: Cluster) -> int | None:
        """One pass at ``now``: start the jobs the backfill variant selects. Returns the variant's
        :meth:`~Backfill.next_wake` time (s, > now) when it has one the engine was not given
        yet, else None. Raises PluginError (a RuntimeError) naming the variant when ``select``
        returns something other than a list (or sequence) of distinct queued jobs that fit, or a
        wake-up time that is not an integer > ``now``; naming the policy for a key that is not a
        real number or is NaN."""
        if self._observe is not None:  # usage hook: every pass, even with an empty queue
            try:  # inline, not through _hook: a call per pass costs ~10 % of a run
                self._observe(now, cluster)
            except PASSED_THROUGH:
                raise
            except Exception as exc:  # noqa: BLE001 - the policy's own failure, named
                raise self._raised(self._who("policy"), "observe", None, now, exc) from exc
        if not self._q:
            return None
        if self.policy.dynamic:
            for j in self._q:
                self._k[j] = self._key(j, now)
            self._q.sort(key=self._k.__getitem__)
        try:  # inline, as observe
            started = self.backfill.select(now, self._q, cluster)
        except PASSED_THROUGH:
            raise
        except Exception as exc:  # noqa: BLE001 - the variant's own failure, named
            raise self._raised(self._who("backfill"), "select", None, now, exc) from exc
        if started.__class__ is not list:
            started = self._selection(started, now)
        if started:
            self._start(started, now, cluster)
        return self._wake_up(now, cluster) if self._next_wake is not None else None

    def _selection(self, got, now: int) -> list:
        """What ``select`` returned at ``now`` when it is not a list: a tuple or another sequence
        as a list; anything else (None, a set, an array, a job number) is a PluginError naming
        the variant."""
        if isinstance(got, Sequence) and not isinstance(got, (str, bytes)):
            return list(got)
        raise PluginError(f"backfill {self.backfill.name!r}: select at {now} s returned {got!r} (type "
                          f"{type(got).__name__}); it must return a list of the queued jobs to start, in start "
                          "order ([] to start none)")

    def _start(self, started: list[int], now: int, cluster: Cluster) -> None:
        """Start the jobs a pass selected: through the cluster, tell the policy, leave the queue.
        Raises PluginError naming the variant for a job that is not queued, a job returned twice
        and jobs that do not fit together in the free nodes."""
        keys = self._k
        for j in started:
            if keys.pop(j, None) is None:
                what = " twice" if j in self._q else ", which is not queued"  # twice: popped at its first mention
                raise PluginError(f"backfill {self.backfill.name!r}: select at {now} s returned job {j!r}{what}; "
                                  "it must return distinct queued jobs")
            try:
                cluster.start(j)
            except RuntimeError:  # it does not fit
                nodes = self.jobs.nodes
                before = started[:started.index(j)]
                raise PluginError(
                    f"backfill {self.backfill.name!r}: select at {now} s returned job {j} ({nodes[j]} nodes) with "
                    f"{cluster.free_nodes} node(s) free after the {len(before)} job(s) before it in its list (the jobs "
                    f"it returns must fit together in cluster.free_nodes: {cluster.free_nodes + sum(nodes[b] for b in before)} "
                    "at this pass)") from None
        if self._on_start is not None:
            try:  # inline, as observe
                self._on_start(started, now)
            except PASSED_THROUGH:
                raise
            except Exception as exc:  # noqa: BLE001 - the policy's own failure, named
                raise self._raised(self._who("policy"), "on_start", None, now, exc) from exc
        if len(started) == 1:
            self._q.remove(started[0])
        else:
            s = set(started)
            self._q = [j for j in self._q if j not in s]

    def _wake_up(self, now: int, cluster: Cluster) -> int | None:
        """The backfill variant's next wake-up after the pass at ``now`` (None if none, or if it is
        the one handed to the engine last: the engine holds it already)."""
        try:  # inline, as observe: every pass of a variant that has it (windows)
            got = self._next_wake(now, self._q, cluster)
        except PASSED_THROUGH:
            raise
        except Exception as exc:  # noqa: BLE001 - the variant's own failure, named
            raise self._raised(self._who("backfill"), "next_wake", None, now, exc) from exc
        if got is None:
            return None
        try:
            wake = operator.index(got)
        except TypeError:
            wake = None
        if wake is None or wake <= now:
            raise PluginError(f"backfill {self.backfill.name!r}: next_wake returned {got!r} at {now} s "
                               "(expected an integer time > now, or None)")
        if wake == self._wake:
            return None
        self._wake = wake
        return wake


class ReplayScheduler:
    """Replays the trace: each job starts at its recorded start (DESIGN.md §3, replay mode).

    Not a queue policy: replay reads the recorded starts by definition, so it gets them apart
    from the :class:`JobView` (``recorded_start``: int per job, the submit time when unknown;
    ``recorded_zero``: bool per job, recorded run time 0; ``recorded_nodes``: the recorded
    placement per job or None). A job whose recorded start has no room (an inconsistent trace or
    system size) starts as soon as it fits, in recorded-start order; ``stats["replay_delayed"]``
    counts those. A job starts on its recorded nodes when they are free, else on the lowest free
    nodes (``stats["placement_fallbacks"]``).
    """

    def __init__(self, jobs: JobView, recorded_start: Sequence[int], recorded_zero: Sequence[bool] | None = None,
                 recorded_nodes: Sequence | None = None):
        self.jobs = jobs
        self._rstart = list(recorded_start)
        self._zero = list(recorded_zero) if recorded_zero is not None else None
        self._rnodes = list(recorded_nodes) if recorded_nodes is not None else None
        self._waiting: list[tuple[int, int, int, int]] = []  # (release, nonzero, trace_index, job)
        self.stats = {"replay_delayed": 0, "placement_fallbacks": 0}

    def submit(self, job: int, now: int):
        rs = self._rstart[job]
        rel = max(rs if rs is not None else now, now)
        # at one second, zero-length jobs first: they hold their nodes only for the pass
        zero = 0 if (self._zero and self._zero[job]) else 1
        bisect.insort(self._waiting, (rel, zero, self.jobs.trace_index[job], job))
        return rel if rel > now else None

    def queued(self) -> int:
        return len(self._waiting)

    def queue(self) -> list[int]:
        return [w[3] for w in self._waiting]

    def cancel(self, job: int, now: int) -> bool:
        """Replay never queues a cancelled job: nothing to remove (False)."""
        return False

    def schedule(self, now: int, cluster: Cluster) -> None:
        nodes = self.jobs.nodes
        rnodes = self._rnodes
        keep = []
        for item in self._waiting:
            rel, _, _, j = item
            if rel <= now and nodes[j] <= cluster.free_nodes:
                ids = rnodes[j] if rnodes is not None else None
                if ids is None or not cluster.try_start(j, ids):
                    if ids is not None:
                        self.stats["placement_fallbacks"] += 1
                    cluster.start(j)
                if now > rel:
                    self.stats["replay_delayed"] += 1
            else:
                keep.append(item)
        self._waiting = keep


def make_scheduler(policy: str, backfill: str, jobs: JobView, options: Mapping[str, Any] | None = None,
                   context: SchedulerContext | None = None, recorded_start: Sequence[int] | None = None,
                   recorded_zero: Sequence[bool] | None = None, recorded_nodes: Sequence | None = None,
                   external: Any = None):
    """Build the scheduler of a run.

    ``replay``: a :class:`ReplayScheduler` over ``recorded_start`` / ``recorded_zero`` /
    ``recorded_nodes`` (backfill is ignored: recorded starts decide). ``external``: a
    :class:`core.external.ExternalScheduler` over ``external`` (a command line, an
    ``inproc:MODULE:NAME`` name or a protocol object, :func:`core.external.connect`). Else a
    :class:`QueueScheduler` of the policy and backfill variant, both built on ``jobs`` with their
    validated options and ``context``. Raises what :func:`validate_scheduler` raises, and
    ConfigError from a plug-in's constructor (e.g. a policy that needs accounts and has none) or
    for an external scheduler that cannot be started; PluginError (:func:`plugin_raised`) when a
    constructor raises anything else.
    """
    spec = validate_scheduler(policy, backfill, options)
    if context is None:
        context = SchedulerContext(system_nodes=max(jobs.nodes, default=1) or 1, source=jobs.source)
    if policy == REPLAY:
        if recorded_start is None:
            raise ConfigError("policy 'replay' needs the recorded starts")
        return ReplayScheduler(jobs, recorded_start, recorded_zero, recorded_nodes)
    if policy == EXTERNAL:
        from .external import ExternalScheduler, connect  # the protocol loads only for external runs

        if external is None:
            raise ConfigError("policy 'external' needs a scheduler (--scheduler \"CMD ARGS\" or the run's scheduler key)")
        return ExternalScheduler(jobs, context, connect(external))
    built = []
    for kind, name, cls, opts in (("policy", policy, spec.policy_cls, spec.policy_options),
                                  ("backfill", backfill, spec.backfill_cls, spec.backfill_options)):
        try:
            built.append(cls(jobs, opts, context))
        except PASSED_THROUGH:
            raise
        except Exception as exc:  # noqa: BLE001 - the plug-in's own failure, named
            raise plugin_raised(f"{kind} {name!r}", f"building it ({cls.__module__}.{cls.__qualname__})", exc) from exc
    return QueueScheduler(*built)
