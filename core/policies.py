"""Account-incentive policies and the weighted (multifactor) policy — scheduler plug-ins.

Every policy here is registered with :func:`core.scheduler.register_policy` when
:mod:`core.scheduler` is imported, combines with every backfill variant (the scheduler applies
backfill to the order the policy gives) and follows the queue contract of DESIGN.md §3.6: a key
per job, lower first, ties broken by ``(submit_time, trace_index)``.

Accounts
    The incentive policies and the account factors of ``weighted`` read an
    :class:`core.accounts.Accounts` table collected in an earlier run (``accounts.json``). It is
    fixed for the whole run, so these keys are static (the queue is never re-sorted). Run options:

    ``accounts_in``  path of an accounts.json, a run directory or its jobs.parquet (CLI
                     ``--accounts-in``); ``collect:replay`` / ``collect:replay:prev`` make
                     :func:`core.run.simulate` collect them first from a replay of the same window
                     (or of the window of the same length just before it). ``simulate`` loads the
                     table once and hands it to the policy as ``options["_accounts"]``.
    ``acct_level``   ``"account"`` (default) or ``"user"``: which table prioritises jobs.

    A job whose account is not in the table gets a neutral value: the mean over the table's
    entries (average power, EDP, ED²P) or 0 Fugaku points (the mean entry has 0 points).

Incentive policies (after the S-RAPS incentive study and ExaDigiT RAPS's ``sort_*`` functions,
``raps/schedulers/default.py``):

    ``acct_avg_power``      account average power per node, higher first
    ``acct_low_avg_power``  account average power per node, lower first
    ``acct_edp``            account EDP sum (Σ job energy·run), lower first
    ``acct_ed2p``           account ED²P sum (Σ job energy·run²), lower first
    ``acct_fugaku_pts``     account Fugaku points, higher first; jobs of accounts with negative
                            points follow all others in base (fcfs) order, as RAPS's
                            ``sort_fugaku_redeeming`` puts them back in "normal priority" order.
                            ``options.fugaku_negative = "points"`` keeps ordering them by points.

    Differences from RAPS: RAPS's account EDP/ED²P are products of the account's sums
    (E_total·T_total, E_total·T_total²), ours are sums of the jobs' own EDP/ED²P; RAPS's average
    power is per job wall-second, ours per node-second (see :mod:`core.accounts`); RAPS breaks ties
    by Python's stable sort of its queue, we by ``(submit_time, trace_index)``.

Weighted policy ``weighted`` (in the spirit of Slurm's multifactor priority plugin,
https://slurm.schedmd.com/priority_multifactor.html): ``score = Σ_f w_f · factor_f``, higher
runs first (key = −score). The weights are run options ``w_<factor>`` (default 0; CLI
``--weights age=1,size=0.5``). Each factor is normalised by a constant fixed for the run and
oriented so that a *positive* weight favours what its namesake policy favours (a study grid may
also give them as one table, ``"options.weights" = [{age = 1.0, size = 0.5}, ...]``):

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
    ``w_fairshare``    fair share of the job's user, Slurm's classic formula F = 2^(−U/S)
                       (https://slurm.schedmd.com/classic_fair_share.html) with equal shares
                       S = 1/(users in the window) and U = the user's share of all usage so far:
                       node-seconds of this run's jobs up to now (running jobs included), plus the
                       user's node-seconds in the accounts table when one is given and
                       ``fairshare_history`` is true (default). No decay. This factor changes as
                       jobs run, so a non-zero ``w_fairshare`` makes the policy dynamic (the queue
                       is re-sorted at every pass).

    Normalisers (options): ``age_norm_s`` (default 604800 = 7 d), ``size_norm`` (default the
    system's node count, else the largest job of the window), ``tlimit_norm_s`` (default the
    largest effective time limit of the window). With one weight 1 and the others 0 the schedule
    is exactly that of ``fcfs`` (age), ``ljf`` (size) or ``sjf`` (tlimit): the key is a strictly
    monotone function of the namesake's key and ties fall to the same ``(submit_time,
    trace_index)`` rule. All weights 0 gives fcfs order (every key ties).
"""

from __future__ import annotations

import math
from typing import Any

from .accounts import Accounts, fugaku_points, load_accounts
from .errors import ConfigError
from .scheduler import JobView, Policy, register_policy

__all__ = [
    "INCENTIVE_POLICIES", "WEIGHT_NAMES", "WEIGHTED_OPTIONS", "accounts_from_options", "AccountPolicy",
    "AcctAvgPower", "AcctLowAvgPower", "AcctEDP", "AcctED2P", "AcctFugakuPoints", "Weighted",
    "parse_weights",
]

#: The account-incentive policies (all need accounts).
INCENTIVE_POLICIES = ("acct_avg_power", "acct_low_avg_power", "acct_edp", "acct_ed2p", "acct_fugaku_pts")
#: Factor names of the weighted policy (options ``w_<name>``).
WEIGHT_NAMES = ("age", "size", "tlimit", "acct_points", "acct_power", "acct_edp", "fairshare")
#: Other options the weighted policy reads.
WEIGHTED_OPTIONS = ("age_norm_s", "size_norm", "tlimit_norm_s", "fairshare_history")
_ACCOUNT_FACTORS = ("acct_points", "acct_power", "acct_edp")
_COLLECT_PREFIX = "collect:"


def accounts_from_options(options: dict, policy: str, required: bool = True) -> Accounts | None:
    """The accounts table a policy uses: ``options["_accounts"]`` (preloaded by ``simulate``) or
    the file named by ``options["accounts_in"]``. Raises ConfigError when ``required`` and none."""
    acc = options.get("_accounts")
    if acc is not None:
        if not isinstance(acc, Accounts):
            raise ConfigError(f"policy {policy!r}: options['_accounts'] must be an Accounts table")
        return acc
    path = options.get("accounts_in")
    if path:
        if str(path).startswith(_COLLECT_PREFIX):
            raise ConfigError(f"policy {policy!r}: accounts_in={path!r} is resolved by core.run.simulate; "
                              "outside it, pass an accounts.json")
        return load_accounts(path)
    if required:
        raise ConfigError(
            f"policy {policy!r} prioritises jobs by accounts collected in an earlier run: give the run option "
            "accounts_in=<accounts.json or run directory> (CLI: --accounts-in; a run writes one with "
            "--accounts-out), or accounts_in='collect:replay'")
    return None


def _level(options: dict) -> str:
    level = options.get("acct_level", "account")
    if level not in ("account", "user"):
        raise ConfigError(f"option acct_level: expected 'account' or 'user', got {level!r}")
    return level


def _job_names(jobs: JobView, level: str) -> list[str]:
    col = jobs.account if level == "account" else jobs.user
    return ["unknown" if (v is None or (not isinstance(v, str) and v != v)) else str(v) for v in col]


def _mean(values) -> float:
    vals = [v for v in values if v is not None and math.isfinite(v)]
    return math.fsum(vals) / len(vals) if vals else 0.0


def account_values(acc: Accounts, level: str, what: str) -> tuple[dict[str, float], float]:
    """``({name: value}, neutral)`` of one account quantity: ``avg_power_w``, ``edp_js``,
    ``ed2p_js2`` or ``fugaku_points``; entries without a value get the neutral one (the table's
    mean, or 0 points)."""
    tab = acc.table(level)
    if what == "fugaku_points":
        pts = fugaku_points(tab)
        vals = {k: (v if v is not None else 0.0) for k, v in pts.items()}
        return vals, 0.0
    if what == "avg_power_w":
        raw = {k: u.avg_power_w for k, u in tab.items()}
    elif what in ("edp_js", "ed2p_js2", "energy_j", "node_seconds"):
        raw = {k: float(getattr(u, what)) for k, u in tab.items()}
    else:
        raise ValueError(what)
    neutral = _mean(raw.values())
    return {k: (v if v is not None else neutral) for k, v in raw.items()}, neutral


class AccountPolicy(Policy):
    """Base of the incentive policies: a per-job value looked up once from the accounts table.

    Subclasses set ``quantity`` (an :func:`account_values` name) and ``sign`` (+1: lower value
    first, −1: higher first)."""

    quantity = "avg_power_w"
    sign = 1.0

    def __init__(self, jobs: JobView, options: dict):
        super().__init__(jobs, options)
        self.accounts = accounts_from_options(options, self.name)
        self.level = _level(options)
        vals, neutral = account_values(self.accounts, self.level, self.quantity)
        names = _job_names(jobs, self.level)
        self.unknown_jobs = sum(1 for n in names if n not in vals)
        self._val = [vals.get(n, neutral) for n in names]

    def value(self, job: int) -> float:
        """The account quantity this policy orders by, for ``job``."""
        return self._val[job]

    def key(self, job):
        return self.sign * self._val[job]


class AcctAvgPower(AccountPolicy):
    """Account average power per node, higher first (RAPS ``acct_avg_power``)."""

    name = "acct_avg_power"
    quantity = "avg_power_w"
    sign = -1.0


class AcctLowAvgPower(AccountPolicy):
    """Account average power per node, lower first (RAPS ``acct_low_avg_power``)."""

    name = "acct_low_avg_power"
    quantity = "avg_power_w"
    sign = 1.0


class AcctEDP(AccountPolicy):
    """Account EDP sum (Σ energy·run over its jobs), lower first (RAPS ``acct_edp``)."""

    name = "acct_edp"
    quantity = "edp_js"
    sign = 1.0


class AcctED2P(AccountPolicy):
    """Account ED²P sum (Σ energy·run²), lower first (RAPS ``acct_ed2p``)."""

    name = "acct_ed2p"
    quantity = "ed2p_js2"
    sign = 1.0


class AcctFugakuPoints(AccountPolicy):
    """Account Fugaku points, higher first; negative-point accounts after all others in fcfs order
    (RAPS ``sort_fugaku_redeeming``), or by points with ``options.fugaku_negative = "points"``."""

    name = "acct_fugaku_pts"
    quantity = "fugaku_points"
    sign = -1.0

    def __init__(self, jobs, options):
        super().__init__(jobs, options)
        mode = options.get("fugaku_negative", "fcfs")
        if mode not in ("fcfs", "points"):
            raise ConfigError(f"option fugaku_negative: expected 'fcfs' or 'points', got {mode!r}")
        self.negative_mode = mode

    def key(self, job):
        p = self._val[job]
        if p < 0 and self.negative_mode == "fcfs":
            return 1.0  # above every key of a non-negative account (those are <= 0): base order
        return -p


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


def _flatten_weights(options: dict) -> dict:
    """Accept ``options["weights"] = {"age": 1.0, ...}`` (a study grid's one-axis weight vector) as
    well as flat ``w_<factor>`` options. Raises ConfigError when a factor is given both ways."""
    wv = options.get("weights")
    if wv is None:
        return options
    if isinstance(wv, str):
        wv = parse_weights(wv)
    if not isinstance(wv, dict):
        raise ConfigError(f"option weights: expected a table factor -> weight, got {wv!r}")
    out = {k: v for k, v in options.items() if k != "weights"}
    for k, v in wv.items():
        name = k if str(k).startswith("w_") else f"w_{k}"
        if name in out:
            raise ConfigError(f"policy 'weighted': weight {name} given both in 'weights' and as an option")
        out[name] = v
    return out


def _float_opt(options: dict, key: str, default: float | None) -> float | None:
    v = options.get(key, default)
    if v is None:
        return None
    if isinstance(v, bool):
        raise ConfigError(f"option {key}: expected a number, got {v!r}")
    try:
        v = float(v)
    except (TypeError, ValueError):
        raise ConfigError(f"option {key}: expected a number, got {v!r}") from None
    if not math.isfinite(v):
        raise ConfigError(f"option {key}: must be finite, got {v!r}")
    return v


class Weighted(Policy):
    """Weighted sum of named, normalised factors (module docstring); higher score first."""

    name = "weighted"

    def __init__(self, jobs: JobView, options: dict):
        options = _flatten_weights(options)
        super().__init__(jobs, options)
        unknown = sorted(k for k in options if k.startswith("w_") and k[2:] not in WEIGHT_NAMES)
        if unknown:
            raise ConfigError(f"policy 'weighted': unknown weight(s) {unknown}; valid: "
                              f"{', '.join('w_' + n for n in WEIGHT_NAMES)}")
        self.weights = {n: _float_opt(options, f"w_{n}", 0.0) for n in WEIGHT_NAMES}
        w = self.weights
        n = len(jobs.submit)
        need_acc = any(w[f] != 0 for f in _ACCOUNT_FACTORS)
        self.accounts = accounts_from_options(options, "weighted", required=need_acc)  # None if not given
        self.level = _level(options)

        # normalisers, fixed for the run
        self.age_norm = _float_opt(options, "age_norm_s", 604800.0)
        size_default = options.get("_system_nodes") or (max(jobs.nodes) if n else 1)
        self.size_norm = _float_opt(options, "size_norm", float(size_default or 1))
        self.tlimit_norm = _float_opt(options, "tlimit_norm_s", float(max(jobs.time_limit) if n else 1) or 1.0)
        for k, v in (("age_norm_s", self.age_norm), ("size_norm", self.size_norm), ("tlimit_norm_s", self.tlimit_norm)):
            if not v > 0:
                raise ConfigError(f"policy 'weighted': option {k} must be > 0, got {v}")
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
            names = _job_names(jobs, self.level)
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
            self._users = _job_names(jobs, "user")
            n_users = len(set(self._users)) or 1
            self._share = 1.0 / n_users
            hist = options.get("fairshare_history", True)
            acc = self.accounts
            self._usage: dict[str, float] = {}
            if hist and acc is not None:
                window_users = set(self._users)
                for u, use in acc.users.items():
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

    # -- fair-share bookkeeping (scheduler hooks, see core.scheduler) ----------------------------
    def fairshare_factor(self, user: str, now: int) -> float:
        """Slurm classic fair-share factor 2^(−U/S) of ``user`` at ``now`` (1.0 with no usage)."""
        if self._cache_t != now:
            self._refresh(now)
        return self._factor.get(user, 1.0)

    def _refresh(self, now: int) -> None:
        usage = dict(self._usage)
        nodes = self.jobs.nodes
        for j, s in self._running.items():
            u = self._users[j]
            usage[u] = usage.get(u, 0.0) + nodes[j] * max(0, now - s)
        total = math.fsum(usage.values())
        if total > 0:
            self._factor = {u: 2.0 ** (-(x / total) / self._share) for u, x in usage.items()}
        else:
            self._factor = {}
        self._cache_t = now

    def observe(self, now: int, cluster) -> None:
        """Called by the scheduler at the start of every pass: close the usage of jobs that ended
        (every end is an event followed by a pass, so a job missing now ended exactly now) and
        adopt running jobs the policy has not seen start (prepopulated at the window start)."""
        if not self.dynamic:
            return
        running = {j for _, j in cluster.running}
        nodes = self.jobs.nodes
        for j in [j for j in self._running if j not in running]:
            s = self._running.pop(j)
            u = self._users[j]
            self._usage[u] = self._usage.get(u, 0.0) + nodes[j] * max(0, now - s)
            self._cache_t = None
        for j in running:
            if j not in self._running:
                self._running[j] = min(self.jobs.recorded_start[j], now)
                self._cache_t = None

    def on_start(self, started, now: int) -> None:
        """Called by the scheduler with the jobs a pass started."""
        if not self.dynamic:
            return
        for j in started:
            self._running[j] = now
        self._cache_t = None


for _cls in (AcctAvgPower, AcctLowAvgPower, AcctEDP, AcctED2P, AcctFugakuPoints, Weighted):
    register_policy(_cls.name, _cls)
