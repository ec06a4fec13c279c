"""Every registered queue policy runs the shared policy conformance suite (twinsweep.testing.conformance,
issue 12 item 4): parametrised from ``POLICIES.names()``, so a new built-in or installed policy is
in it automatically. Policies that order by accounts collected earlier get an accounts table
written from an fcfs run of the same trace, with a distinct average power per entry (the
conformance machine has no power model, so the collected energies are all 0 and the table would
order nothing: the incentive policies would be tested as plain fcfs)."""

import dataclasses

import pytest

from twinsweep.core.accounts import Usage, from_jobs, save_accounts
from twinsweep.core.policies import INCENTIVE_POLICIES, POLICIES
from twinsweep.core.run import simulate
from twinsweep.testing.conformance import PolicyConformance, _config, random_workload, tiny_system


def _powered(usage: dict[str, Usage]) -> dict[str, Usage]:
    """Each entry (in name order) at 100 W x (its rank + 1) per node: energy, EDP and ED2P follow."""
    out = {}
    for i, name in enumerate(sorted(usage)):
        u = usage[name]
        e = 100.0 * (i + 1) * u.node_seconds
        out[name] = Usage(u.jobs, u.node_seconds, u.run_seconds, e, e * u.run_seconds, e * u.run_seconds ** 2)
    return out


@pytest.fixture(scope="module")
def accounts_file(tmp_path_factory):
    res = simulate(_config("fcfs", "easy"), workload=random_workload(1), system=tiny_system())
    acc = from_jobs(res.jobs)
    acc = dataclasses.replace(acc, accounts=_powered(acc.accounts), users=_powered(acc.users))
    return str(save_accounts(acc, tmp_path_factory.mktemp("acc") / "accounts.json"))


class TestPolicyConformance(PolicyConformance):
    @pytest.fixture(params=POLICIES.names())
    def policy_name(self, request):
        return request.param

    @pytest.fixture
    def policy_options(self, policy_name, accounts_file):
        return {"accounts_in": accounts_file} if policy_name in INCENTIVE_POLICIES else {}
