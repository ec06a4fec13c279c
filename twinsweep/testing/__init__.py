"""Conformance suites for twinsweep plug-ins (issue 12 item 4), in the manner of ``optuna.testing``.

A plug-in author reuses them by subclassing a suite in a pytest module and providing its
fixture (needs pytest: ``pip install 'twinsweep[test]'``)::

    from twinsweep.testing.conformance import PolicyConformance

    class TestMyPolicy(PolicyConformance):
        @pytest.fixture
        def policy_name(self):
            return "mypkg.policy:MyPolicy"   # or the entry-point name

The twin's own tests (tests/test_policy_conformance.py, tests/test_backfill_conformance.py,
tests/test_backend_conformance.py) parametrise the same suites from the registries, so every
registered or installed plug-in runs them. This package ships with the distribution (unlike
``tests/``) so that an installed third-party package can import it.
"""
