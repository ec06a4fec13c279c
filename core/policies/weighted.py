"""The weighted (multifactor) policy ``weighted``, in the spirit of Slurm's multifactor priority
plugin (https://slurm.schedmd.com/priority_multifactor.html).

``score = Σ_f w_f · factor_f``, higher runs first (key = −score). The weights are options
``w_<factor>`` (default 0; CLI ``--weights age=1,size=0.5``; a study grid may also give them as one
table, ``"options.weights" = [{age = 1.0, size = 0.5}, ...]``). Each factor is normalised by a
constant fixed for the run and oriented so that a *positive* weight favours what its namesake
policy favours:

    ``w_age``          age = (now − submit) / age_norm_s; older first (``fcfs``). Not capped
                       (Slurm's PriorityMaxAge cap would make the key time-dependent), so its
                       order is submit order and the key is static.
    ``w_size``         nodes / size_norm; larger first (``ljf``). A negative weight favours small
                       jobs (Slurm's PriorityFavorSmall).
    ``w_tlimit``       1 − time_limit / tlimit_norm_s; shorter requested time first (``sjf``).
    ``w_acct_points``  account Fugaku points / max |points|, in [−1, 1]; more points first.
    ``w_acct_power``   account average power per node / max; higher power first
                       (``acct_avg_power``; negative weight = ``acct_low_avg_power``).
    ``w_acct_edp``     1 − account EDP sum / max; lower EDP first (``acct_edp``).
    ``w_fairshare``    fair share of the job's user (or account: ``fairshare_level``), Slurm's
                       classic formula F = 2^(−U/S) (https://slurm.schedmd.com/classic_fair_share.html)
                       with equal shares S = 1/(users, or accounts, in the window) and U = the
                       entity's share of all usage so far: node-seconds of this run's jobs up to
                       now (running jobs included), plus the entity's node-seconds in the accounts
                       table when one is given and ``fairshare_history`` is true (default). No
                       decay by default; with ``fairshare_half_life_s`` = H, usage decays as in
                       Slurm's multifactor plugin (``PriorityDecayHalfLife``,
                       https://slurm.schedmd.com/priority_multifactor.html): a node-second used
                       at time τ counts 2^(−(now − τ)/H) at ``now`` (a running job's part is the
                       exact integral n·H/ln 2·(1 − 2^(−(now − start)/H))); the history table's
                       usage counts as used at the window's first submit. This factor changes as
                       jobs run, so a non-zero ``w_fairshare`` makes the policy dynamic (the queue
                       is re-sorted at every pass). Nodes held down by an availability calendar
                       are no one's usage.

Normalisers (options, each > 0): ``age_norm_s`` (default 604800 = 7 d), ``size_norm`` (default
the system's node count), ``tlimit_norm_s`` (default the largest effective time limit of the
window). With one weight 1 and the others 0 the schedule is exactly that of ``fcfs`` (age),
``ljf`` (size) or ``sjf`` (tlimit): the key is a strictly monotone function of the namesake's key
and ties fall to the same ``(submit_time, trace_index)`` rule. All weights 0 gives fcfs order.
"""

from __future__ import annotations

import math
import dataclasses
from typing import Any, ClassVar, Literal, Mapping

from ..errors import ConfigError
from .base import POLICIES, Policy, PolicyOptions
from .incentives import account_values, job_account_names, policy_accounts

__all__ = ["WEIGHT_NAMES", "WEIGHTED_OPTIONS", "Weighted", "WeightedOptions", "parse_weights"]

#: Factor names of the weighted policy (options ``w_<name>``).
WEIGHT_NAMES = ("age", "size", "tlimit", "acct_points", "acct_power", "acct_edp", "fairshare")
#: Other options the weighted policy reads.
WEIGHTED_OPTIONS = ("age_norm_s", "size_norm", "tlimit_norm_s", "fairshare_history", "fairshare_level",
                    "fairshare_half_life_s")
_ACCOUNT_FACTORS = ("acct_points", "acct_power", "acct_edp")


def parse_weights(text: str) -> dict[str, float]:
    """``"age=1,size=0.5"`` (or ``w_age=1``) -> ``{"w_age": 1.0, "w_size": 0.5}``.

    Raises ConfigError naming a bad item or an unknown factor (listing the valid ones)."""
    out: dict[str, float] = {}
    for item in [s.strip() for s in str(text).split(",") if s.strip()]:
        if "=" not in item:
            raise ConfigError(f"--weights: expected name=value items separated by commas, got {item!r}")
        k, v = (s.strip() for s in item.split("=", 1))
        k = k[2:] if k.startswith("w_") else k
        if k not in WEIGHT_NAMES:
            raise ConfigError(f"--weights: unknown factor {k!r}; valid: {', '.join(WEIGHT_NAMES)}")
        try:
            out[f"w_{k}"] = float(v)
        except ValueError:
            raise ConfigError(f"--weights: {k}={v!r} is not a number") from None
        if not math.isfinite(out[f"w_{k}"]):
            raise ConfigError(f"--weights: {k}={v!r} must be finite")
    return out


@dataclasses.dataclass(frozen=True)
class WeightedOptions(PolicyOptions):
    """Options of ``weighted`` (module docstring): weights ``w_<factor>`` (finite numbers, default
    0), normalisers ``age_norm_s`` (s), ``size_norm`` (nodes), ``tlimit_norm_s`` (s) (> 0; None:
    the default), ``fairshare_history`` (bool). ``weights``: the weights as one table
    ``{factor: weight}`` or a ``"age=1,size=0.5"`` string, folded into the ``w_`` options
    (ConfigError when a factor is given both ways or is unknown)."""

    extra_names: ClassVar[tuple[str, ...]] = ("weights",)

    w_age: float = 0.0
    w_size: float = 0.0
    w_tlimit: float = 0.0
    w_acct_points: float = 0.0
    w_acct_power: float = 0.0
    w_acct_edp: float = 0.0
    w_fairshare: float = 0.0
    age_norm_s: float = dataclasses.field(default=604800.0, metadata={"gt": 0})
    size_norm: float | None = dataclasses.field(default=None, metadata={"gt": 0})
    tlimit_norm_s: float | None = dataclasses.field(default=None, metadata={"gt": 0})
    fairshare_history: bool = True
    fairshare_level: Literal["user", "account"] = "user"
    fairshare_half_life_s: float | None = dataclasses.field(default=None, metadata={"gt": 0})

    def notes(self) -> list[str]:
        """Every weight 0: each job's priority is 0, so the queue is in submit order (as ``fcfs``)."""
        if any(getattr(self, f"w_{n}") for n in WEIGHT_NAMES):
            return []
        return ["policy 'weighted' with every weight 0 (no w_* option or weights given) gives every job the same "
                "priority: the queue is in submit order, as fcfs"]

    @classmethod
    def prepare(cls, data: dict[str, Any]) -> dict[str, Any]:
        wv = data.get("weights")
        out = {k: v for k, v in data.items() if k != "weights"}
        if wv is None:
            return out
        if isinstance(wv, str):
            wv = parse_weights(wv)
        if not isinstance(wv, Mapping):
            raise ConfigError(f"option weights: expected a table factor -> weight, got {wv!r}")
        for k, v in wv.items():
            name = k if str(k).startswith("w_") else f"w_{k}"
            if name[2:] not in WEIGHT_NAMES:
                raise ConfigError(f"option weights: unknown factor {k!r}; valid factors: {', '.join(WEIGHT_NAMES)}")
            if name in out:
                raise ConfigError(f"weight {name} given both in 'weights' and as an option")
            out[name] = v
        return out


@POLICIES.register("weighted")
class Weighted(Policy):
    """Weighted sum of named, normalised factors (module docstring); higher score first.

    Raises ConfigError when an account factor has a weight and no accounts table is given."""

    name = "weighted"
    Options = WeightedOptions

    def __init__(self, jobs, options=None, context=None):
        super().__init__(jobs, options, context)
        o = self.options
        self.weights = {n: getattr(o, f"w_{n}") for n in WEIGHT_NAMES}
        w = self.weights
        n = len(jobs.submit)
        need_acc = any(w[f] != 0 for f in _ACCOUNT_FACTORS)
        self.accounts = policy_accounts(self.context, o, "weighted", required=need_acc)  # None if not given
        self.level = o.acct_level

        # normalisers, fixed for the run
        self.age_norm = o.age_norm_s
        self.size_norm = o.size_norm if o.size_norm is not None else float(self.context.system_nodes or 1)
        self.tlimit_norm = (o.tlimit_norm_s if o.tlimit_norm_s is not None
                            else float(max(jobs.time_limit) if n else 1) or 1.0)
        self.t_ref = min(jobs.submit) if n else 0

        # static score per job (only the factors with a non-zero weight are evaluated)
        score = [0.0] * n
        if w["age"]:
            s, t0, a = w["age"], self.t_ref, self.age_norm
            score = [x + s * ((t0 - jobs.submit[j]) / a) for j, x in enumerate(score)]
        if w["size"]:
            s, m = w["size"], self.size_norm
            score = [x + s * (jobs.nodes[j] / m) for j, x in enumerate(score)]
        if w["tlimit"]:
            s, m = w["tlimit"], self.tlimit_norm
            score = [x + s * (1.0 - jobs.time_limit[j] / m) for j, x in enumerate(score)]
        if need_acc:
            names = job_account_names(jobs, self.level)
            for factor, qty in (("acct_points", "fugaku_points"), ("acct_power", "avg_power_w"),
                                ("acct_edp", "edp_js")):
                if not w[factor]:
                    continue
                vals, neutral = account_values(self.accounts, self.level, qty)
                scale = max((abs(v) for v in vals.values()), default=0.0)
                per_job = [vals.get(nm, neutral) for nm in names]
                if scale > 0:
                    per_job = [v / scale for v in per_job]
                else:
                    per_job = [0.0] * n
                if factor == "acct_edp":
                    per_job = [1.0 - v for v in per_job]
                s = w[factor]
                score = [x + s * v for x, v in zip(score, per_job)]
        self._static = [-x for x in score]

        # fair share (dynamic)
        self.dynamic = bool(w["fairshare"])
        if self.dynamic:
            self._n = n
            self._users = job_account_names(jobs, o.fairshare_level)  # the fair-share entity of each job
            n_users = len(set(self._users)) or 1
            self._share = 1.0 / n_users
            self._half_life = o.fairshare_half_life_s
            acc = self.accounts
            self._usage: dict[str, float] = {}  # closed usage, decayed to self._usage_t
            self._usage_t = self.t_ref
            if o.fairshare_history and acc is not None:
                window_users = set(self._users)
                for u, use in acc.table(o.fairshare_level).items():
                    if u in window_users:
                        self._usage[u] = float(use.node_seconds)
            self._running: dict[int, int] = {}  # job -> start (s)
            self._cache_t: int | None = None
            self._factor: dict[str, float] = {}

    # -- queue keys ---------------------------------------------------------------------------
    def key(self, job):
        return self._static[job]

    def key_at(self, job, now):
        if not self.dynamic:
            return self._static[job]
        if self._cache_t != now:
            self._refresh(now)
        return self._static[job] - self.weights["fairshare"] * self._factor.get(self._users[job], 1.0)

    # -- fair-share bookkeeping (scheduler hooks) ------------------------------------------------
    def fairshare_factor(self, user: str, now: int) -> float:
        """Slurm classic fair-share factor 2^(−U/S) of ``user`` at ``now`` (1.0 with no usage)."""
        if self._cache_t != now:
            self._refresh(now)
        return self._factor.get(user, 1.0)

    def _used(self, nodes: int, start: int, until: int) -> float:
        """Usage (node-s, decayed to ``until`` when a half-life is set) of ``nodes`` nodes busy on [start, until)."""
        d = max(0, until - start)
        h = self._half_life
        if h is None:
            return nodes * d
        return nodes * (h / math.log(2.0)) * -math.expm1(-d * math.log(2.0) / h)

    def _decay_closed(self, now: int) -> None:
        """Bring the closed usage to ``now`` (a no-op without a half-life)."""
        if self._half_life is not None and now > self._usage_t:
            f = 2.0 ** (-(now - self._usage_t) / self._half_life)
            self._usage = {u: x * f for u, x in self._usage.items()}
        self._usage_t = max(self._usage_t, now)

    def _refresh(self, now: int) -> None:
        self._decay_closed(now)
        usage = dict(self._usage)
        nodes = self.jobs.nodes
        for j, s in self._running.items():
            u = self._users[j]
            usage[u] = usage.get(u, 0.0) + self._used(nodes[j], s, now)
        total = math.fsum(usage.values())
        if total > 0:
            self._factor = {u: 2.0 ** (-(x / total) / self._share) for u, x in usage.items()}
        else:
            self._factor = {}
        self._cache_t = now

    def observe(self, now: int, cluster) -> None:
        """Start of a pass: close the usage of jobs that ended (every end is an event followed by a
        pass, so a job missing now ended exactly now) and adopt running jobs the policy has not
        seen start (prepopulated at the window start: started at expected end − time limit)."""
        if not self.dynamic:
            return
        limit, n = self.jobs.time_limit, self._n
        # entries past the n jobs are an availability calendar's holds: nodes down, no one's usage
        running = {j: exp_end - limit[j] for exp_end, j in cluster.running if j < n}
        nodes = self.jobs.nodes
        ended = [j for j in self._running if j not in running]
        if ended:
            self._decay_closed(now)
        for j in ended:
            s = self._running.pop(j)
            u = self._users[j]
            self._usage[u] = self._usage.get(u, 0.0) + self._used(nodes[j], s, now)
            self._cache_t = None
        for j, started in running.items():
            if j not in self._running:
                self._running[j] = min(started, now)
                self._cache_t = None

    def on_start(self, started, now: int) -> None:
        """The jobs a pass started at ``now``."""
        if not self.dynamic:
            return
        for j in started:
            self._running[j] = now
        self._cache_t = None
