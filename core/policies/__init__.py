"""Queue-ordering policies (DESIGN.md §3.6): the :class:`Policy` contract, the :data:`POLICIES`
registry and the built-ins, one concern per module:

* :mod:`.base` — the ABC, its options base class and the registry;
* :mod:`.basic` — ``fcfs``, ``sjf``, ``ljf``, ``priority``;
* :mod:`.incentives` — account-incentive policies (``acct_*``);
* :mod:`.weighted` — the multifactor ``weighted`` policy (the tuning target);
* :mod:`.site` — queue orders of real sites (``queue_class``).

Importing this package registers the built-ins. Installed plug-ins (entry-point group
``twinsweep.policies``) are listed by ``POLICIES.names()`` and loaded on first use.
"""

from ..jobview import JobView, SchedulerContext
from .base import POLICIES, Policy, PolicyOptions
from . import basic, incentives, site, weighted  # noqa: F401 - registers the built-ins
from .basic import FCFS, LJF, SJF, TracePriority
from .site import QueueClass, QueueClassOptions
from .incentives import (INCENTIVE_POLICIES, AccountPolicy, AcctAvgPower, AcctED2P, AcctEDP,
                         AcctFugakuPoints, AcctLowAvgPower, account_values, policy_accounts)
from .weighted import WEIGHT_NAMES, WEIGHTED_OPTIONS, Weighted, WeightedOptions, parse_weights

__all__ = [
    "POLICIES", "Policy", "PolicyOptions", "JobView", "SchedulerContext", "FCFS", "SJF", "LJF",
    "TracePriority", "QueueClass", "QueueClassOptions", "INCENTIVE_POLICIES", "AccountPolicy", "AcctAvgPower", "AcctLowAvgPower",
    "AcctEDP", "AcctED2P", "AcctFugakuPoints", "account_values", "policy_accounts", "WEIGHT_NAMES",
    "WEIGHTED_OPTIONS", "Weighted", "WeightedOptions", "parse_weights",
]
