"""Every registered queue policy runs the shared policy conformance suite (twinsweep.testing.conformance,
issue 12 item 4): parametrised from ``POLICIES.names()``, so a new built-in or installed policy is
in it automatically. Policies that order by accounts collected earlier get an accounts table
written from an fcfs run of the same trace."""

import pytest

from twinsweep.core.accounts import from_jobs, save_accounts
from twinsweep.core.policies import INCENTIVE_POLICIES, POLICIES
from twinsweep.core.run import simulate
from twinsweep.testing.conformance import PolicyConformance, _config, random_workload, tiny_system


@pytest.fixture(scope="module")
def accounts_file(tmp_path_factory):
    res = simulate(_config("fcfs", "easy"), workload=random_workload(1), system=tiny_system())
    return str(save_accounts(from_jobs(res.jobs), tmp_path_factory.mktemp("acc") / "accounts.json"))


class TestPolicyConformance(PolicyConformance):
    @pytest.fixture(params=POLICIES.names())
    def policy_name(self, request):
        return request.param

    @pytest.fixture
    def policy_options(self, policy_name, accounts_file):
        return {"accounts_in": accounts_file} if policy_name in INCENTIVE_POLICIES else {}
