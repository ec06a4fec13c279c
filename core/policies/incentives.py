"""Account-incentive policies: order jobs by what their account did in an earlier run.

Accounts
    These policies (and the account factors of ``weighted``) read an
    :class:`core.accounts.Accounts` table collected in an earlier run (``accounts.json``). It is
    fixed for the whole run, so their keys are static (the queue is never re-sorted). Run options
    (:class:`core.options.RunOptions`, accepted by every policy):

    ``accounts_in``  path of an accounts.json, a run directory or its jobs.parquet (CLI
                     ``--accounts-in``); ``collect:replay`` / ``collect:replay:prev`` make
                     :func:`core.run.simulate` collect them first from a replay of the same window
                     (or of the window of the same length just before it). ``simulate`` loads the
                     table once and hands it to the policy as ``context.accounts``
                     (:class:`core.jobview.SchedulerContext`).
    ``acct_level``   ``"account"`` (default) or ``"user"``: which table prioritises jobs.

    A job whose account is not in the table gets a neutral value: the mean over the table's
    entries (average power, EDP, ED²P) or 0 Fugaku points (the mean entry has 0 points).
    An :class:`AccountCoverageWarning` says when the table cannot order a run's jobs at all (every
    job gets the same value, e.g. ``acct_level = "account"`` on a trace without accounts: the run
    is then fcfs) or when more than half of the jobs get the neutral value.

Policies (after the S-RAPS incentive study and ExaDigiT RAPS's ``sort_*`` functions,
``raps/schedulers/default.py``):

    ``acct_avg_power``      account average power per node, higher first
    ``acct_low_avg_power``  account average power per node, lower first
    ``acct_edp``            account EDP sum (Σ job energy·run), lower first
    ``acct_ed2p``           account ED²P sum (Σ job energy·run²), lower first
    ``acct_fugaku_pts``     account Fugaku points, higher first; jobs of accounts with negative
                            points follow all others in base (fcfs) order, as RAPS's
                            ``sort_fugaku_redeeming`` puts them back in "normal priority" order.
                            Option ``fugaku_negative = "points"`` keeps ordering them by points.

    Differences from RAPS: RAPS's account EDP/ED²P are products of the account's sums
    (E_total·T_total, E_total·T_total²), ours are sums of the jobs' own EDP/ED²P; RAPS's average
    power is per job wall-second, ours per node-second (see :mod:`core.accounts`); RAPS breaks ties
    by Python's stable sort of its queue, we by ``(submit_time, trace_index)``.

These values are measurements of *earlier* jobs, not of the queued ones: no clairvoyance.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Literal

from ..accounts import Accounts, fugaku_points, load_accounts
from ..errors import ConfigError, RunWarning
from ..jobview import JobView, SchedulerContext
from .base import POLICIES, Policy, PolicyOptions

__all__ = [
    "INCENTIVE_POLICIES", "AccountPolicy", "AcctAvgPower", "AcctLowAvgPower", "AcctEDP", "AcctED2P",
    "AcctFugakuPoints", "FugakuOptions", "policy_accounts", "account_values", "job_account_names",
    "AccountCoverageWarning",
]

#: The account-incentive policies (all need accounts).
INCENTIVE_POLICIES = ("acct_avg_power", "acct_low_avg_power", "acct_edp", "acct_ed2p", "acct_fugaku_pts")
_COLLECT_PREFIX = "collect:"


class AccountCoverageWarning(RunWarning):
    """The accounts table cannot order a run's jobs (all get one value), or most jobs have no entry."""


def policy_accounts(context: SchedulerContext, options: PolicyOptions, policy: str,
                    required: bool = True) -> Accounts | None:
    """The accounts table a policy uses: ``context.accounts`` (loaded by ``simulate``) or the file
    named by ``options.accounts_in``. Raises ConfigError when ``required`` and there is none, or
    when ``accounts_in`` is a ``collect:`` mode outside :func:`core.run.simulate`."""
    acc = context.accounts
    if acc is not None:
        if not isinstance(acc, Accounts):
            raise ConfigError(f"policy {policy!r}: the context's accounts must be an Accounts table")
        return acc
    path = options.accounts_in
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


def job_account_names(jobs: JobView, level: str) -> list[str]:
    """Per job, its account (``level="account"``) or user name; ``"unknown"`` when missing."""
    col = jobs.account if level == "account" else jobs.user
    return ["unknown" if (v is None or (not isinstance(v, str) and v != v)) else str(v) for v in col]


def _mean(values) -> float:
    vals = [v for v in values if v is not None and math.isfinite(v)]
    return math.fsum(vals) / len(vals) if vals else 0.0


def account_values(acc: Accounts, level: str, what: str) -> tuple[dict[str, float], float]:
    """``({name: value}, neutral)`` of one account quantity: ``avg_power_w``, ``edp_js``,
    ``ed2p_js2``, ``energy_j``, ``node_seconds`` or ``fugaku_points``; entries without a value get
    the neutral one (the table's mean, or 0 points). Raises ValueError for another quantity."""
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
    first, −1: higher first). Raises ConfigError at construction when no accounts are given."""

    quantity = "avg_power_w"
    sign = 1.0

    def __init__(self, jobs, options=None, context=None):
        super().__init__(jobs, options, context)
        self.accounts = policy_accounts(self.context, self.options, self.name)
        self.level = self.options.acct_level
        vals, neutral = account_values(self.accounts, self.level, self.quantity)
        names = job_account_names(jobs, self.level)
        self.unknown_jobs = sum(1 for n in names if n not in vals)
        self._val = [vals.get(n, neutral) for n in names]
        self._warn_coverage(names, vals, neutral)

    def _warn_coverage(self, names: list[str], vals: dict[str, float], neutral: float) -> None:
        """Warn (:class:`AccountCoverageWarning`) when the accounts cannot order this run's jobs:
        every job gets the same value (the order is then plain fcfs, e.g. ``acct_level =
        "account"`` on a trace without accounts, where every job is ``"unknown"``), or more than
        half of the jobs belong to entries the table does not hold (neutral value)."""
        n = len(names)
        if n < 2:
            return
        level = self.level
        if len(set(self._val)) == 1:
            if set(names) == {"unknown"}:
                why = (f"the trace gives no {level} for any job (all 'unknown')"
                       + ("; use acct_level = 'user'" if level == "account" else ""))
            else:
                why = f"all {n} jobs get {self.quantity} = {self._val[0]:.6g}"
            warnings.warn(AccountCoverageWarning(
                f"policy {self.name!r}: the accounts table cannot order this run's jobs ({why}): the queue is in "
                "plain (submit_time, trace_index) order, i.e. fcfs"), stacklevel=3)
        elif self.unknown_jobs * 2 > n:
            missing = sorted({x for x in names if x not in vals})
            warnings.warn(AccountCoverageWarning(
                f"policy {self.name!r}: {self.unknown_jobs} of {n} jobs ({len(missing)} {level}s, e.g. "
                f"{missing[:3]}) have no entry in the accounts table and get the neutral {self.quantity} "
                f"{neutral:.6g}"), stacklevel=3)

    def value(self, job: int) -> float:
        """The account quantity this policy orders by, for ``job``."""
        return self._val[job]

    def key(self, job):
        return self.sign * self._val[job]


@POLICIES.register("acct_avg_power")
class AcctAvgPower(AccountPolicy):
    """Account average power per node, higher first (RAPS ``acct_avg_power``)."""

    name = "acct_avg_power"
    quantity = "avg_power_w"
    sign = -1.0


@POLICIES.register("acct_low_avg_power")
class AcctLowAvgPower(AccountPolicy):
    """Account average power per node, lower first (RAPS ``acct_low_avg_power``)."""

    name = "acct_low_avg_power"
    quantity = "avg_power_w"
    sign = 1.0


@POLICIES.register("acct_edp")
class AcctEDP(AccountPolicy):
    """Account EDP sum (Σ energy·run over its jobs), lower first (RAPS ``acct_edp``)."""

    name = "acct_edp"
    quantity = "edp_js"
    sign = 1.0


@POLICIES.register("acct_ed2p")
class AcctED2P(AccountPolicy):
    """Account ED²P sum (Σ energy·run²), lower first (RAPS ``acct_ed2p``)."""

    name = "acct_ed2p"
    quantity = "ed2p_js2"
    sign = 1.0


@dataclasses.dataclass(frozen=True)
class FugakuOptions(PolicyOptions):
    """fugaku_negative: ``"fcfs"`` (default; negative-point accounts after all others, in base
    order) or ``"points"`` (ordered by points like the others)."""

    fugaku_negative: Literal["fcfs", "points"] = "fcfs"


@POLICIES.register("acct_fugaku_pts")
class AcctFugakuPoints(AccountPolicy):
    """Account Fugaku points, higher first; negative-point accounts after all others in fcfs order
    (RAPS ``sort_fugaku_redeeming``), or by points with option ``fugaku_negative = "points"``."""

    name = "acct_fugaku_pts"
    Options = FugakuOptions
    quantity = "fugaku_points"
    sign = -1.0

    def __init__(self, jobs, options=None, context=None):
        super().__init__(jobs, options, context)
        self.negative_mode = self.options.fugaku_negative

    def key(self, job):
        p = self._val[job]
        if p < 0 and self.negative_mode == "fcfs":
            return 1.0  # above every key of a non-negative account (those are <= 0): base order
        return -p
