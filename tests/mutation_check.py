"""Mutation check: are the tests able to fail? (issue 16)

Each entry of :data:`MUTANTS` is one deliberate bug: ``(file, exact original snippet,
replacement)`` plus the test files that should catch it. The script copies the repository to a
temporary folder, and for each mutant writes the replacement into the copy, runs those tests
there with ``CI=1`` (hypothesis then replays the same examples on every run, and failures are not
shrunk), records which test functions failed, and restores the file. A mutant *survives* when no
test fails; a mutant that issue 16 names must be caught by at least two independent tests
(``min_kills``: its whole test set runs); the others stop at their first failing test unless
``--every-test`` is given. The exit status
is 1 when any listed mutant survives or is caught by fewer tests than it needs, 2 when the
unmutated copy already fails its tests.

    python tests/mutation_check.py                 # every mutant (about an hour on 2 cores)
    python tests/mutation_check.py --list          # names, files and test sets
    python tests/mutation_check.py easy-shadow-first-end extra-not-decremented   # a few
    python tests/mutation_check.py --every-test --tests tests/test_reference_scheduler.py easy-shadow-first-end

Every snippet must occur exactly once in its file: tests/test_mutation_list.py (fast, in CI)
checks that, so a refactor that moves a snippet fails CI until this list is updated. To add a
mutant, append a :class:`Mutant`; keep its test set to the files that could catch it.

Uses the Python running it and ``TWINSWEEP_DATA`` from the environment (default: the data folder
beside the checkout, as the tests do).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# test sets (files, relative to the repository)
# (fast hand-computed tests first: with one failure enough, a run stops at the first)
SCHEDULING = ("tests/test_engine_schedules.py", "tests/test_run_outputs.py", "tests/test_policies.py",
              "tests/test_accounts.py", "tests/test_engine_properties.py", "tests/test_reference_scheduler.py")
CONSERVATIVE = ("tests/test_conservative_profile.py",) + SCHEDULING
ENGINE = ("tests/test_stats.py",) + SCHEDULING + ("tests/test_timeline_energy.py",)
POWER = ("tests/test_power.py", "tests/test_facility_power.py", "tests/test_stats.py", "tests/test_run_outputs.py",
         "tests/test_timeline_energy.py")
STORE = ("tests/test_sweep_store.py", "tests/test_sweep_integrity.py", "tests/test_backends.py")
POLICY = ("tests/test_policies.py", "tests/test_accounts.py") + SCHEDULING


@dataclasses.dataclass(frozen=True)
class Mutant:
    """One deliberate bug: ``original`` (found exactly once in ``file``) becomes ``replacement``;
    ``tests`` are the test files run against it; ``min_kills``: distinct test functions that
    must fail (2 for the mutants issue 16 names)."""

    name: str
    file: str
    original: str
    replacement: str
    tests: tuple
    min_kills: int = 1
    why: str = ""


MUTANTS = [
    # -- named in issue 16: each must be caught by two independent tests ------------------------
    Mutant("easy-shadow-first-end", "core/backfill/easy.py",
           "            if avail >= head_n:\n                shadow = exp_end if exp_end > now1 else now1",
           "            if True:\n                shadow = exp_end if exp_end > now1 else now1", SCHEDULING, 2,
           "EASY's shadow is the first expected end, not when enough nodes are free"),
    Mutant("extra-not-decremented", "core/backfill/easy.py",
           "                started.append(j)\n                extra -= n",
           "                started.append(j)", SCHEDULING, 2,
           "a job backfilled on EASY's extra nodes does not use them up"),
    Mutant("expected-end-is-real-end", "core/resources.py",
           "        self._started.append((job, pool.allocate(k)))\n        bisect.insort(self.running, (self.now + self._limit[job], job))",
           "        self._started.append((job, pool.allocate(k)))\n        bisect.insort(self.running, (self.now + 1, job))",
           CONSERVATIVE, 2, "the scheduler's expected end of a started job is not start + limit (the Cluster cannot "
           "know the real end any more: it holds no run time)"),
    # -- scheduler: ordering and the backfill variants -------------------------------------------
    Mutant("none-skips-blocked-job", "core/backfill/simple.py",
           "            if nodes[j] > free:\n                break",
           "            if nodes[j] > free:\n                continue", SCHEDULING,
           why="`none` passes the first job that does not fit (becomes firstfit)"),
    Mutant("firstfit-exact-fit-refused", "core/backfill/simple.py",
           "            if nodes[j] <= free:\n                started.append(j)",
           "            if nodes[j] < free:\n                started.append(j)", SCHEDULING,
           why="firstfit refuses a job that takes exactly the free nodes"),
    Mutant("easy-in-order-stops-early", "core/backfill/easy.py",
           "        while i < nq and nodes[q[i]] <= free:",
           "        while i < nq and nodes[q[i]] < free:", SCHEDULING,
           why="EASY's in-order phase refuses an exact fit"),
    Mutant("easy-backfill-ends-before-shadow", "core/backfill/easy.py",
           "            if limit[j] <= room:",
           "            if limit[j] < room:", SCHEDULING,
           why="a backfill ending exactly at the shadow time is refused"),
    Mutant("easy-backfill-past-shadow", "core/backfill/easy.py",
           "            if limit[j] <= room:",
           "            if limit[j] <= room + 10:", SCHEDULING,
           why="a backfill may run past the shadow time on the head's nodes"),
    Mutant("easy-overdue-job-ends-now", "core/backfill/easy.py",
           "            if avail >= head_n:\n                shadow = exp_end if exp_end > now1 else now1",
           "            if avail >= head_n:\n                shadow = exp_end", SCHEDULING,
           why="a running job past its expected end (kill off) ends now, not at now + 1"),
    Mutant("easy-extra-excludes-shadow-ends", "core/backfill/easy.py",
           "            if exp_end > shadow:  # clamped at now + 1 <= shadow: the same test\n                break",
           "            if exp_end >= shadow:  # clamped at now + 1 <= shadow: the same test\n                break", SCHEDULING,
           why="EASY's extra nodes leave out jobs ending exactly at the shadow time"),
    Mutant("tie-break-trace-order-first", "core/scheduler.py",
           "        return (k, j.submit[job], j.trace_index[job], job)",
           "        return (k, j.trace_index[job], j.submit[job], job)", SCHEDULING,
           why="ties broken by trace order before submit time"),
    Mutant("sjf-longest-first", "core/policies/basic.py",
           "    def key(self, job):\n        return self.jobs.time_limit[job]",
           "    def key(self, job):\n        return -self.jobs.time_limit[job]", SCHEDULING,
           why="sjf orders by time limit descending"),
    Mutant("ljf-smallest-first", "core/policies/basic.py",
           "        return -self.jobs.nodes[job]", "        return self.jobs.nodes[job]", SCHEDULING,
           why="ljf orders by nodes ascending"),
    Mutant("conservative-zero-second-reservations", "core/backfill/conservative.py",
           "            dur = np.maximum(np.asarray(self.jobs.time_limit, dtype=np.int64), 1)",
           "            dur = np.asarray(self.jobs.time_limit, dtype=np.int64)", CONSERVATIVE,
           why="a zero-length job reserves nothing"),
    Mutant("conservative-delays-not-counted", "core/backfill/conservative.py",
           "        self.stats[\"reservation_delays\"] += c.profile.reserve(",
           "        self.stats[\"reservation_delays\"] += 0 * c.profile.reserve(", CONSERVATIVE,
           why="reservation moves are not counted"),
    Mutant("conservative-reuse-with-overdue-job", "core/backfill/conservative.py",
           "and (not run or run[0][0] > now)", "and True", CONSERVATIVE,
           why="the profile is reused while a running job is past its expected end"),
    Mutant("conservative-overdue-job-ends-now", "core/_profile.py",
           "        t = max(run_end[i], now + 1)", "        t = run_end[i]", CONSERVATIVE,
           why="in the profile, a job past its expected end frees its nodes now"),
    Mutant("priority-lowest-first", "core/policies/basic.py",
           "        return math.inf if math.isnan(p) else -p", "        return math.inf if math.isnan(p) else p",
           SCHEDULING, why="priority orders the trace's priority ascending"),
    Mutant("dynamic-queue-not-rekeyed", "core/scheduler.py",
           "        if self.policy.dynamic:\n            for j in self._q:",
           "        if False:\n            for j in self._q:", POLICY,
           why="a dynamic policy's queue keeps the keys of submit time (fair share never re-sorts it)"),
    Mutant("replay-ignores-recorded-start", "core/scheduler.py",
           "        rel = max(rs if rs is not None else now, now)", "        rel = now", SCHEDULING,
           why="replay starts each job as soon as it fits, not at its recorded start"),
    Mutant("replay-delay-not-counted", "core/scheduler.py",
           "                    self.stats[\"replay_delayed\"] += 1", "                    self.stats[\"replay_delayed\"] += 0",
           ("tests/test_engine_schedules.py", "tests/test_run_outputs.py", "tests/test_stats.py",
            "tests/test_engine_properties.py"),
           why="a replayed job that had no room at its recorded start is not counted"),
    # -- weighted and account-incentive policies ----------------------------------------------------
    Mutant("weighted-tlimit-longest-first", "core/policies/weighted.py",
           "score = [x + s * (1.0 - jobs.time_limit[j] / m) for j, x in enumerate(score)]",
           "score = [x + s * (jobs.time_limit[j] / m) for j, x in enumerate(score)]", POLICY,
           why="a positive w_tlimit favours long requests (not sjf's order)"),
    Mutant("weighted-size-norm-largest-job", "core/policies/weighted.py",
           "else float(self.context.system_nodes or 1)", "else float(max(jobs.nodes, default=1) or 1)", POLICY,
           why="size is normalised by the largest request instead of the machine's nodes"),
    Mutant("weighted-fairshare-share-inverted", "core/policies/weighted.py",
           "2.0 ** (-(x / total) / self._share)", "2.0 ** (-(x / total) * self._share)", POLICY,
           why="Slurm's classic fair share 2^(-U/S) with U*S instead of U/S"),
    Mutant("acct-avg-power-lower-first", "core/policies/incentives.py",
           "    quantity = \"avg_power_w\"\n    sign = -1.0", "    quantity = \"avg_power_w\"\n    sign = 1.0", POLICY,
           why="acct_avg_power runs low-power accounts first"),
    Mutant("acct-unknown-account-not-neutral", "core/policies/incentives.py",
           "        self._val = [vals.get(n, neutral) for n in names]",
           "        self._val = [vals.get(n, 0.0) for n in names]", POLICY,
           why="a job of an account missing from the table gets 0 instead of the table's mean"),
    Mutant("fugaku-negative-not-last", "core/policies/incentives.py",
           "        if p < 0 and self.negative_mode == \"fcfs\":", "        if False:", POLICY,
           why="negative-point accounts are ordered by points, not after all others in fcfs order"),
    # -- engine ------------------------------------------------------------------------------------
    Mutant("no-second-pass-after-zero-length", "core/kernel.py",
           "                    apply_starts(t, t)\n                    if not zero_started:\n                        break",
           "                    apply_starts(t, t)\n                    if True:\n                        break", ENGINE,
           why="zero-length jobs release their nodes but no pass follows in that second"),
    Mutant("kill-ignored", "core/jobprep.py",
           "        occ = np.minimum(run_v, limit_a + grace)",
           "        occ = run_v", ENGINE, why="jobs outlive their time limit with kill on"),
    Mutant("timeout-at-exact-limit", "core/outcome.py",
           "        elif kill and run[j] > limit[j] + grace:",
           "        elif kill and run[j] >= limit[j] + grace:",
           ENGINE, why="a job that runs exactly its limit is reported as timeout"),
    Mutant("default-time-limit-ignored", "core/jobprep.py",
           "    fallback = float(default_time_limit) if default_time_limit else np.asarray(",
           "    fallback = np.asarray(", ENGINE,
           why="a job without a usable limit never gets the system's default"),
    Mutant("full-machine-job-rejected", "core/jobprep.py",
           "        elif nodes_raw[j] > N:", "        elif nodes_raw[j] >= N:", ENGINE,
           why="a job asking for the whole machine is rejected"),
    Mutant("prepopulated-start-at-window", "core/kernel.py",
           "                apply_starts(rstart[j], self.t0)", "                apply_starts(self.t0, self.t0)", ENGINE,
           why="prepopulated jobs restart at the window start instead of their recorded start"),
    Mutant("window-end-status", "core/outcome.py",
           "        elif t1 is not None and end[j] > t1:", "        elif t1 is not None and end[j] >= t1:",
           ENGINE, why="a job ending exactly at the window end is reported running"),
    Mutant("idle-power-of-busy-nodes-kept", "core/kernel.py",
           "                busy_power += nodes[j] * (npow[j] - idle_w)\n                running_count += 1",
           "                busy_power += nodes[j] * npow[j]\n                running_count += 1", ENGINE,
           why="busy nodes draw their job's power on top of idle power"),
    Mutant("job-energy-one-node", "core/outcome.py",
           "    per_job_w = npow * np.asarray(J.nodes[:n], dtype=np.int64)",
           "    per_job_w = npow * 1", ENGINE,
           why="a job's energy counts one node"),
    # -- power -------------------------------------------------------------------------------------
    Mutant("node-power-no-idle-floor", "core/power.py",
           "        + c * (params[\"cpu_idle_w\"] + u_c * (params[\"cpu_max_w\"] - params[\"cpu_idle_w\"]))",
           "        + c * u_c * params[\"cpu_max_w\"]", POWER, why="CPU power scales from 0, not from idle"),
    Mutant("converter-constant-dropped", "core/power.py",
           "    p_n = (p + g_n * float(nc.c_w)) / float(nc.eta)", "    p_n = p / float(nc.eta)", POWER,
           why="the node converters' no-load loss is not paid"),
    Mutant("losses-multiplied-by-eta", "core/power.py",
           "    p_r = (p_n + sw + g_r * float(rc.c_w)) / float(rc.eta)",
           "    p_r = (p_n + sw + g_r * float(rc.c_w)) * float(rc.eta)", POWER,
           why="the rectifier loss as a multiplication by eta (DESIGN §4 forbids it)"),
    Mutant("recorded-power-not-per-node", "core/power.py",
           "        rec = avg / nodes", "        rec = avg", POWER,
           why="a job's recorded power (all nodes) is used per node"),
    Mutant("last-bin-full-length", "core/power.py",
           "        self.blen = (np.minimum(bin_start + period, t1) - bin_start).astype(\"float64\")",
           "        self.blen = np.full(len(bin_start), float(period))", POWER,
           why="the last, partial timeline bin is averaged over a full period"),
    Mutant("integral-drops-last-piece", "core/power.py",
           "    lengths = np.diff(np.append(starts, int(t1))).astype(\"float64\")",
           "    lengths = np.append(np.diff(starts), 0).astype(\"float64\")", POWER,
           why="the energy integral leaves out the last piece of the step function"),
    # -- the sweep store -------------------------------------------------------------------------
    Mutant("store-tmp-counted-done", "sweep/store.py",
           "                if p.is_dir() and not p.name.startswith(TMP_PREFIX) and TMP_MARK not in p.name}",
           "                if p.is_dir()}", STORE,
           why="a half-written run folder counts as done"),
    Mutant("store-leftovers-kept", "sweep/store.py",
           "        for p in leftovers:\n            if p.is_dir():",
           "        for p in leftovers[:0]:\n            if p.is_dir():", STORE,
           why="a killed sweep's temporary folders are never cleaned"),
    Mutant("store-failed-attempts-forgotten", "sweep/store.py",
           "                doc = json.loads(path.read_text())", "                doc = {\"key\": key, \"attempts\": []}",
           STORE, why="each failure record forgets the earlier attempts"),
    Mutant("store-failed-includes-done", "sweep/store.py",
           "                if (p / \"error.json\").exists() and not self.is_done(p.name)}",
           "                if (p / \"error.json\").exists()}", STORE,
           why="a run that failed once and then succeeded is still listed as failed"),
    Mutant("store-damaged-run-kept", "sweep/store.py",
           "        for k, reason in sorted(bad.items()):\n            self.quarantine(k, reason)",
           "        for k, reason in sorted(bad.items())[:0]:\n            self.quarantine(k, reason)", STORE,
           why="a damaged run folder is neither quarantined nor run again"),
    Mutant("store-table-unsorted", "sweep/store.py",
           "        return df.sort_values(\"key\", kind=\"mergesort\").reset_index(drop=True)",
           "        return df.reset_index(drop=True)", STORE,
           why="runs.parquet is not sorted by key (not identical however produced)"),
    Mutant("store-commit-leaves-tmp-on-error", "sweep/store.py",
           "    except BaseException as exc:\n        shutil.rmtree(tmp, ignore_errors=True)\n        if is_disk_full(exc):",
           "    except BaseException as exc:\n        if is_disk_full(exc):", STORE,
           why="a run whose writing fails leaves its temporary folder behind"),
]


def mutant_by_name() -> dict:
    """{name: Mutant}; raises ValueError on a repeated name."""
    out = {}
    for m in MUTANTS:
        if m.name in out:
            raise ValueError(f"mutant name {m.name!r} is used twice")
        out[m.name] = m
    return out


def apply(m: Mutant, text: str) -> str:
    """``text`` with the mutant's snippet replaced; ValueError unless it occurs exactly once."""
    n = text.count(m.original)
    if n != 1:
        raise ValueError(f"mutant {m.name!r}: its snippet occurs {n} times in {m.file} (must be exactly once); "
                         f"update tests/mutation_check.py")
    return text.replace(m.original, m.replacement)


_FAIL = re.compile(r"^(?:FAILED|ERROR) (\S+?)(?:\[[^\]]*\])?(?: - .*)?$")


def _pytest(copy: Path, tests, timeout: float, maxfail: int = 0) -> tuple[int | None, dict, str]:
    """Run ``tests`` in ``copy`` (stopping after ``maxfail`` failures when > 0); returns (exit code or
    None on timeout, {failing test function: its failing items (parametrisations)}, last lines of
    the output)."""
    env = dict(os.environ, CI="1", PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1")
    env.setdefault("TWINSWEEP_DATA", str(ROOT.parent / "shared" / "data"))
    env["TWINSWEEP_HYPOTHESIS_PROFILE"] = "mutation"  # CI's examples, failures not shrunk
    cmd = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", *tests]
    if maxfail:
        cmd.insert(3, f"--maxfail={maxfail}")
    try:
        r = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, {"(timeout)": 1}, ""
    failed: dict[str, int] = {}
    for line in r.stdout.splitlines():
        if m := _FAIL.match(line.strip()):
            failed[m.group(1)] = failed.get(m.group(1), 0) + 1
    return r.returncode, failed, "\n".join(r.stdout.splitlines()[-5:])


def _copy_tree(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.splitlines()
    for rel in files:
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="mutants to run (default: all)")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--timeout", type=float, default=1200, help="seconds per test run (a hang counts as caught)")
    ap.add_argument("--every-test", action="store_true",
                    help="run a mutant's whole test set even when one failure suffices (slower; lists every "
                         "test that catches it)")
    ap.add_argument("--tests", action="append", metavar="FILE",
                    help="(repeatable) run these test files (or node ids) against every chosen mutant instead of its own "
                         "test set, e.g. to see whether one property alone catches it (the verdict then "
                         "counts the failures among these)")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # restore and clean up on kill
    known = mutant_by_name()
    if args.list:
        for m in MUTANTS:
            print(f"{m.name:40s} {m.file:18s} min {m.min_kills}  {m.why}")
        return 0
    unknown = [n for n in args.names if n not in known]
    if unknown:
        ap.error(f"unknown mutant(s) {unknown}; --list shows them")
    chosen = [known[n] for n in args.names] if args.names else list(MUTANTS)
    for m in chosen:  # every snippet is checked before any work
        apply(m, (ROOT / m.file).read_text())
    bad = 0
    with tempfile.TemporaryDirectory(prefix="twinsweep-mutants-") as tmp:
        copy = Path(tmp) / "repo"
        _copy_tree(copy)
        tests_of = (lambda m: tuple(args.tests)) if args.tests else (lambda m: m.tests)
        union = sorted({t for m in chosen for t in tests_of(m)})
        t0 = time.perf_counter()
        code, failed, tail = _pytest(copy, union, args.timeout)
        print(f"baseline (unmutated copy): {len(union)} test files, {time.perf_counter() - t0:.0f} s, exit {code}",
              flush=True)
        if code != 0:
            print(f"the unmutated tests fail ({sorted(failed)}); fix them first:\n{tail}")
            return 2
        for m in chosen:
            path = copy / m.file
            original = path.read_text()
            path.write_text(apply(m, original))
            t0 = time.perf_counter()
            try:
                # one failure suffices unless two independent tests are required (then every test runs)
                stop = 1 if m.min_kills == 1 and not args.every_test else 0
                code, failed, _ = _pytest(copy, tests_of(m), args.timeout, maxfail=stop)
            finally:
                path.write_text(original)
            caught = len(failed)
            verdict = "caught" if caught >= m.min_kills else ("SURVIVED" if caught == 0 else "CAUGHT BY TOO FEW")
            bad += verdict != "caught"
            print(f"{verdict:17s} {m.name} ({m.file}; {time.perf_counter() - t0:.0f} s): "
                  f"{caught} test(s) failed{' (stopped at the first)' if stop and caught else ''}, "
                  f"{m.min_kills} needed", flush=True)
            for t in sorted(failed):
                print(f"    {t}" + (f" ({failed[t]} items)" if failed[t] > 1 else ""))
    print(f"{len(chosen) - bad} of {len(chosen)} mutants caught as required")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
