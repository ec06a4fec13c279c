"""Compiled availability-profile pass of conservative backfilling (DESIGN.md §3.7).

The conservative pass rebuilds the availability profile from scratch at every scheduling pass
and gives every queued job, in queue order, the earliest reservation that holds its nodes for its
whole time limit. On the largest traces here (RICC under fcfs: up to ~20,000 queued jobs and as
many profile breakpoints, ~450,000 passes) a pure-Python loop over a flat profile does not finish
in hours, so this routine is compiled with numba (integer arithmetic only: the result is the
same as the interpreted code's, which ``NUMBA_DISABLE_JIT=1`` runs unchanged). Three devices,
each exact (tests/test_conservative_profile.py compares them with a brute-force model):

* the profile is kept in blocks with their least and most free nodes (a two-level sorted list,
  "sqrt decomposition"): a search skips whole blocks, a reservation spanning a block updates it
  lazily, inserting a breakpoint shifts at most one block — O(blocks + block size) per job
  instead of O(breakpoints);
* a job cannot start before the last reservation given to a job of the same shape (nodes,
  duration) earlier in the pass, as the profile only shrinks: its search starts there;
* a run of consecutive jobs of one shape that all fit at the same start is reserved in one step
  (the RICC queue above is ~400 such runs).

The scheduler (:mod:`core.scheduler`) also keeps a pass's final :class:`Profile` and reserves only
the newcomers on it when the rebuild could not change any older reservation.
"""

from __future__ import annotations

import numpy as np
from ._jit import njit

#: breakpoints per block of the profile (a block splits in two halves when full)
BLOCK = 128


@njit(cache=True, nogil=True)
def _refresh(BF, bn, blz, bmin, bmax, b):
    lo = BF[b, 0]
    hi = lo
    for i in range(1, bn[b]):
        v = BF[b, i]
        if v < lo:
            lo = v
        elif v > hi:
            hi = v
    bmin[b] = lo + blz[b]
    bmax[b] = hi + blz[b]


class Profile:
    """The availability profile of one pass, kept between passes for reuse.

    ``Profile(now, run_end, run_nodes, free_now, n_queued, block)`` builds it from the running
    jobs (arguments as in :func:`conservative_pass`; ``n_queued`` sizes the arrays, which grow
    when needed). Raises ValueError for an invalid ``block``.

    Blocks of breakpoints: ``BT``/``BF`` (blocks x ``block``) hold times (s) and free nodes less
    the block's lazy offset ``blz``; ``bn`` counts each block's breakpoints, ``bmin``/``bmax``
    bound its free nodes, ``order`` lists block ids in time order (``nblk`` in use). An
    open-addressing table (``hn``, ``hd`` -> ``hv``; ``hn == -1``: empty; ``hcount`` used) maps
    a job shape (nodes, reserved duration) to the latest reservation given to that shape.
    """

    __slots__ = ("BT", "BF", "bn", "blz", "bmin", "bmax", "order", "nblk", "total", "block",
                 "hn", "hd", "hv", "hcount")

    def __init__(self, now, run_end, run_nodes, free_now, n_queued, block=BLOCK):
        if block < 4 or block % 2:
            raise ValueError(f"block must be even and >= 4, got {block}")
        self.block = block
        (self.BT, self.BF, self.bn, self.blz, self.bmin, self.bmax, self.order, self.nblk,
         self.total) = _build(now, run_end, run_nodes, free_now, n_queued, block)
        self.hn = np.full(_table_size(n_queued), -1, np.int64)
        self.hd = np.empty_like(self.hn)
        self.hv = np.empty_like(self.hn)
        self.hcount = 0

    def reserve(self, now, q_nodes, q_dur, q_prev, out_start) -> int:
        """Reserve jobs in order on this profile (see :func:`conservative_pass`); returns the
        number of reservations later than ``q_prev``. Grows the arrays when they could fill."""
        # every block but one holds >= half a block of breakpoints (blocks start half full or
        # less only when built, split into halves, never shrink), and each reservation adds at
        # most one breakpoint: blocks after this call <= (breakpoints + Q) // half + 1
        breakpoints = int(self.bn[: self.nblk].sum())
        need = (breakpoints + q_nodes.shape[0]) // (self.block // 2) + 2
        if need > self.BT.shape[0]:
            self._grow(2 * need)
        if 2 * (self.hcount + q_nodes.shape[0]) > self.hn.shape[0]:  # keep the table half empty
            size = _table_size(self.hcount + q_nodes.shape[0])
            self.hn, self.hd, self.hv = _rehash(self.hn, self.hd, self.hv, size)
        self.nblk, self.hcount, delays = _reserve(
            self.BT, self.BF, self.bn, self.blz, self.bmin, self.bmax, self.order, self.nblk,
            self.total, self.hn, self.hd, self.hv, self.hcount, now, q_nodes, q_dur, q_prev,
            out_start, self.block)
        return delays

    def move_to(self, now) -> None:
        """Start the profile at ``now`` instead of the previous pass time. Valid only when no
        breakpoint lies in between (the caller checks: no job ended, none past its limit)."""
        self.BT[self.order[0], 0] = now

    @property
    def free_now(self) -> int:
        b = self.order[0]
        return int(self.BF[b, 0] + self.blz[b])

    def _grow(self, rows) -> None:
        for name in ("BT", "BF"):
            a = getattr(self, name)
            g = np.empty((rows, a.shape[1]), np.int64)
            g[: a.shape[0]] = a
            setattr(self, name, g)
        for name in ("bn", "blz", "bmin", "bmax", "order"):
            a = getattr(self, name)
            g = np.zeros(rows, np.int64)
            g[: a.shape[0]] = a
            setattr(self, name, g)


def conservative_pass(now, run_end, run_nodes, free_now, q_nodes, q_dur, q_prev, out_start, block=BLOCK):
    """Reserve every queued job in queue order; return how many reservations moved later.

    Args (int scalars / 1-D int64 arrays):
        now: the pass time (s).
        run_end, run_nodes: running jobs' expected ends (start + time limit, s), ascending, and
            their node counts, shape (R,). An expected end at or before ``now`` (a job past its
            limit, kill disabled) is taken as ``now + 1``, as in EASY's shadow time.
        free_now: nodes free now.
        q_nodes, q_dur: queued jobs in queue order, shape (Q,): nodes and reserved duration (s,
            the time limit, at least 1: a zero-length job holds its nodes for the pass).
        q_prev: each queued job's reservation at the previous pass (s), -1 for none, shape (Q,).
        out_start: filled with each job's reservation start (s), shape (Q,); ``== now`` means
            the job starts now.
        block: breakpoints per profile block (even, >= 4; small in tests so that every block
            path runs).
    Returns: the number of jobs whose reservation is later than ``q_prev`` (reservation delays).
    Raises: ValueError if a job asks for more nodes than the machine has (rejected at submit by
    the engine, so never in a run) or ``block`` is invalid.

    The profile is a step function of free nodes: breakpoint ``(time, free)`` holds free nodes
    from its time to the next breakpoint's; the last holds forever with the whole machine free,
    so every job that fits the machine gets a reservation. A job's earliest start is a
    breakpoint: a window starting inside a step that fails also fails from the step's start.
    """
    prof = Profile(now, run_end, run_nodes, free_now, q_nodes.shape[0], block)
    return prof.reserve(now, q_nodes, q_dur, q_prev, out_start)


@njit(cache=True, nogil=True)
def _build(now, run_end, run_nodes, free_now, n_queued, block):
    half = block // 2
    n_run = run_end.shape[0]
    # every block but the last holds >= half breakpoints; each reservation adds at most one
    nbmax = (n_run + n_queued + 2) // half + 2
    BT = np.empty((nbmax, block), np.int64)
    BF = np.empty((nbmax, block), np.int64)
    bn = np.zeros(nbmax, np.int64)
    blz = np.zeros(nbmax, np.int64)
    bmin = np.empty(nbmax, np.int64)
    bmax = np.empty(nbmax, np.int64)
    order = np.empty(nbmax, np.int64)
    # -- build from the running jobs ---------------------------------------------------------
    nblk = 1
    order[0] = 0
    b = 0
    BT[0, 0] = now
    BF[0, 0] = free_now
    bn[0] = 1
    last_t = now
    total = free_now
    for i in range(n_run):
        t = max(run_end[i], now + 1)
        total += run_nodes[i]
        if t == last_t:
            BF[b, bn[b] - 1] = total
        else:
            last_t = t
            if bn[b] == half:
                b = nblk
                order[nblk] = b
                nblk += 1
            BT[b, bn[b]] = t
            BF[b, bn[b]] = total
            bn[b] += 1
    for x in range(nblk):
        _refresh(BF, bn, blz, bmin, bmax, x)
    return BT, BF, bn, blz, bmin, bmax, order, nblk, total


def _table_size(n_keys: int) -> int:
    """Power of two >= 2 x n_keys (at least 16): the shape table's size."""
    return max(16, 1 << (2 * max(n_keys, 1) - 1).bit_length())


@njit(cache=True, nogil=True)
def _slot(hn, hd, n, d):
    # the slot of shape (n, d), or the empty slot where it goes (linear probing)
    mask = hn.shape[0] - 1
    h = (n * 1000003 + d * 8191) & mask
    while hn[h] != -1 and (hn[h] != n or hd[h] != d):
        h = (h + 1) & mask
    return h


@njit(cache=True, nogil=True)
def _rehash(hn, hd, hv, size):
    gn = np.full(size, -1, np.int64)
    gd = np.empty(size, np.int64)
    gv = np.empty(size, np.int64)
    for h in range(hn.shape[0]):
        if hn[h] != -1:
            g = _slot(gn, gd, hn[h], hd[h])
            gn[g] = hn[h]
            gd[g] = hd[h]
            gv[g] = hv[h]
    return gn, gd, gv


@njit(cache=True, nogil=True)
def _reserve(BT, BF, bn, blz, bmin, bmax, order, nblk, total, hn, hd, hv, hcount, now, q_nodes,
             q_dur, q_prev, out_start, block):
    # the last reservation per shape (nodes, duration) in the table hn/hd -> hv: a later job of
    # the same shape cannot start earlier (the profile only shrinks), so its search starts there
    half = block // 2
    n_q = q_nodes.shape[0]
    delays = 0
    i = 0
    while i < n_q:
        n = q_nodes[i]
        d = q_dur[i]
        if n > total:
            raise ValueError("a queued job asks for more nodes than the machine has")
        # -- earliest breakpoint (oi, j) from which n nodes stay free for d seconds -------------
        oi = 0
        j = 0
        h = _slot(hn, hd, n, d)
        t_low = hv[h] if hn[h] != -1 else now
        if t_low > now:  # locate the breakpoint at t_low (breakpoints are never removed)
            lo = 0
            hi = nblk - 1
            while lo < hi:  # last block whose first breakpoint is <= t_low
                mid = (lo + hi + 1) // 2
                if BT[order[mid], 0] <= t_low:
                    lo = mid
                else:
                    hi = mid - 1
            oi = lo
            b = order[oi]
            while BT[b, j] < t_low:
                j += 1
        while True:
            b = order[oi]
            while True:  # first breakpoint at or after (oi, j) with free >= n
                if j < bn[b] and bmax[b] >= n:
                    lz = blz[b]
                    while j < bn[b] and BF[b, j] + lz < n:
                        j += 1
                    if j < bn[b]:
                        break
                oi += 1
                j = 0
                b = order[oi]
            t_end = BT[b, j] + d
            wmin = BF[b, j] + blz[b]  # least free nodes over the window
            mo = oi
            mb = b
            mj = j + 1
            fits = True
            while True:  # first later breakpoint before t_end that lacks nodes
                if mj >= bn[mb]:
                    mo += 1
                    if mo >= nblk:
                        break
                    mb = order[mo]
                    mj = 0
                    if BT[mb, bn[mb] - 1] < t_end and bmin[mb] >= n:
                        mj = bn[mb]  # the whole block holds n nodes
                        wmin = min(wmin, bmin[mb])
                        continue
                if BT[mb, mj] >= t_end:
                    break
                v = BF[mb, mj] + blz[mb]
                if v < n:
                    fits = False
                    break
                wmin = min(wmin, v)
                mj += 1
            if fits:
                break
            oi = mo  # retry after the step that lacks nodes
            j = mj + 1
        t = BT[b, j]
        end = t + d
        # the next jobs of the same shape start no earlier (the table) and fit at t while the
        # window keeps n free nodes each: reserve the whole run at once
        k = 1
        while k < wmin // n and i + k < n_q and q_nodes[i + k] == n and q_dur[i + k] == d:
            k += 1
        for r in range(i, i + k):
            out_start[r] = t
            if t > now and 0 <= q_prev[r] < t:
                delays += 1
        if hn[h] == -1:
            hn[h] = n
            hd[h] = d
            hcount += 1
        hv[h] = t
        i += k
        n *= k  # nodes held from here on
        # -- hold n nodes on [t, end) ---------------------------------------------------------
        po = oi
        pb = b
        pj = j
        last_o = oi
        last_j = j
        at_end = False  # a breakpoint at exactly `end` exists
        while True:
            if pj == 0 and BT[pb, bn[pb] - 1] < end:  # whole block inside: lazily
                blz[pb] -= n
                bmin[pb] -= n
                bmax[pb] -= n
                last_o = po
                last_j = bn[pb] - 1
            else:
                x = pj
                while x < bn[pb] and BT[pb, x] < end:
                    BF[pb, x] -= n
                    x += 1
                if x > pj:
                    last_o = po
                    last_j = x - 1
                    _refresh(BF, bn, blz, bmin, bmax, pb)
                if x < bn[pb]:
                    at_end = BT[pb, x] == end
                    break
            po += 1
            if po >= nblk:
                break
            pb = order[po]
            pj = 0
        if at_end:
            continue
        # -- split the step that contains `end`: new breakpoint after (last_o, last_j) ----------
        lb = order[last_o]
        value = BF[lb, last_j] + blz[lb] + n  # free there before this reservation
        ins = last_j + 1
        if bn[lb] == block:  # full: move the upper half to a new block
            nb_ = nblk
            if nb_ >= BT.shape[0]:  # Profile.reserve sizes the arrays so that this cannot happen
                raise ValueError("profile blocks exhausted")
            for x in range(half):
                BT[nb_, x] = BT[lb, half + x]
                BF[nb_, x] = BF[lb, half + x]
            bn[nb_] = half
            bn[lb] = half
            blz[nb_] = blz[lb]
            for x in range(nblk, last_o + 1, -1):
                order[x] = order[x - 1]
            order[last_o + 1] = nb_
            nblk += 1
            _refresh(BF, bn, blz, bmin, bmax, lb)
            _refresh(BF, bn, blz, bmin, bmax, nb_)
            if ins > half:
                lb = nb_
                ins -= half
        for x in range(bn[lb], ins, -1):
            BT[lb, x] = BT[lb, x - 1]
            BF[lb, x] = BF[lb, x - 1]
        BT[lb, ins] = end
        BF[lb, ins] = value - blz[lb]
        bn[lb] += 1
        if value < bmin[lb]:
            bmin[lb] = value
        if value > bmax[lb]:
            bmax[lb] = value
    return nblk, hcount, delays
