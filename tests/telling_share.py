"""How often do the reference-agreement examples tell backfill variants apart? (a measurement, not a test)

An example of the EASY or conservative items of tests/test_reference_scheduler.py can only catch
a bug in that variant when the variant's schedule differs from the plain queue order (``none``);
one can only catch a bug in EASY's shadow time when some pass finds a head whose shadow is *not*
the first expected end; and one can only check conservative backfilling's moved reservations
when some reservation moves. This script draws examples from a scenario strategy of
tests/reference_harness.py (hypothesis, derandomised as under ``CI=1``), runs the reference
scheduler on them and prints, per policy x variant x kill, the share of examples that are

* ``differs``: the variant's starts differ from ``none``'s (same policy, same kill);
* ``shadow>first`` (EASY): a pass's shadow time is later than the first expected end of the
  running jobs (so a shadow taken at the first end would be wrong);
* ``moved`` (conservative): at least one reservation moved later (``reservation_delays`` > 0).

Examples that cannot run (nothing in the window, ``priority`` without priorities) are left out
of the shares (they are the tests' error branch).

    python tests/telling_share.py                      # the strategy the reference test draws from
    python tests/telling_share.py --strategy scenarios --examples 300
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

import reference_harness as rh  # noqa: E402
import reference_scheduler as ref  # noqa: E402


def measure(strategy, n: int, policies=ref.POLICIES, kills=(True, False)) -> dict:
    """{(policy, variant, kill): (examples, differs, shadow>first or moved)} over ``n`` examples."""
    drawn = []

    @settings(max_examples=n, derandomize=True, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(scn=strategy)
    def collect(scn):
        drawn.append(scn)

    collect()
    out = {}
    for policy in policies:
        for kill in kills:
            for variant in ("easy", "conservative"):
                total = differs = special = 0
                for scn in drawn:
                    base = rh.run_reference(scn, policy, "none", kill)
                    if base.t_end <= base.t0 or (policy == "priority" and not rh.kept_has_priority(scn, base)):
                        continue
                    res = rh.run_reference(scn, policy, variant, kill)
                    total += 1
                    starts = lambda r: [o.start for o in r.jobs]  # noqa: E731
                    differs += starts(res) != starts(base)
                    if variant == "easy":
                        special += any(p.shadow is not None and p.first_end is not None and p.shadow > p.first_end
                                       for p in res.passes)
                    else:
                        special += res.reservation_delays > 0
                out[(policy, variant, kill)] = (total, differs, special)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--strategy", default="reference_scenarios",
                    help="a strategy function of tests/reference_harness.py (default: the reference test's)")
    ap.add_argument("--examples", type=int, default=300)
    args = ap.parse_args(argv)
    strategy = getattr(rh, args.strategy)()
    res = measure(strategy, args.examples)
    print(f"strategy {args.strategy}, {args.examples} examples drawn")
    print(f"{'policy':9s} {'kill':6s} {'variant':13s} {'runs':>5s} {'differs':>9s} {'special':>18s}")
    for (policy, variant, kill), (total, differs, special) in res.items():
        what = "shadow>first" if variant == "easy" else "moved"
        share = lambda k: f"{k / total:6.0%}" if total else "   n/a"  # noqa: E731
        print(f"{policy:9s} {'on' if kill else 'off':6s} {variant:13s} {total:5d} {share(differs):>9s} "
              f"{what:>12s} {share(special)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
