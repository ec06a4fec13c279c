"""Node names and node lists: Slurm/LSF host-list expansion, name → index maps, core-slot placement.

Host-list syntax (Slurm ``scontrol show hostnames`` / ``sacct`` ``NodeList``; the same
bracket form is used by LSF and PBS tools): comma-separated items, each a name with zero or
more bracket groups ``[a-b,c,…]``; a range keeps the zero-padding of its first bound
(``node[001-003]`` → ``node001 node002 node003``), several groups form the Cartesian product
(``r[1-2]n[01-02]`` → ``r1n01 r1n02 r2n01 r2n02``). Commas inside brackets do not split
items. ``None assigned``, ``None``, ``(null)`` and the empty string mean no node.

Hostnames become 0-based node indexes with :class:`NodeIndex`: by default each distinct name
gets its rank in natural order (``n2`` before ``n10``) among the names seen in the trace, so
that the recorded placement is consistent within one trace; traces whose names carry the node
number (``lassen17``) can instead use ``NodeIndex.by_number(offset)``.
"""

from __future__ import annotations

import heapq
import re
from typing import Iterable, Sequence

__all__ = ["expand_hostlist", "compress_hostlist", "natural_key", "NodeIndex", "assign_core_slots",
           "HostlistError"]

_NONE = {"", "none", "none assigned", "(null)", "null", "n/a"}
_GROUP_RE = re.compile(r"\[([^\[\]]*)\]")
_RANGE_RE = re.compile(r"^(\d+)(?:-(\d+))?$")


class HostlistError(ValueError):
    """A malformed host list (unbalanced brackets, a bad range)."""


def _split_top(text: str) -> list[str]:
    items, depth, cur = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"unbalanced ']' in host list {text!r}")
        if ch == "," and depth == 0:
            items.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise HostlistError(f"unbalanced '[' in host list {text!r}")
    items.append("".join(cur))
    return [i.strip() for i in items if i.strip()]


def _expand_group(body: str, where: str) -> list[str]:
    out: list[str] = []
    for part in body.split(","):
        part = part.strip()
        m = _RANGE_RE.match(part)
        if not m:
            raise HostlistError(f"bad range {part!r} in host list {where!r}")
        lo_s, hi_s = m.group(1), m.group(2)
        if hi_s is None:
            out.append(lo_s)
            continue
        lo, hi = int(lo_s), int(hi_s)
        if hi < lo:
            raise HostlistError(f"range {part!r} runs backwards in host list {where!r}")
        width = len(lo_s) if lo_s.startswith("0") or len(lo_s) == len(hi_s) else 0
        out.extend(str(i).zfill(width) for i in range(lo, hi + 1))
    return out


def expand_hostlist(text: str | None) -> list[str]:
    """Expand a host list into names, in order (duplicates kept as written).

    >>> expand_hostlist("node[001-003,010],login1")
    ['node001', 'node002', 'node003', 'node010', 'login1']

    Raises HostlistError on unbalanced brackets or a bad range.
    """
    if text is None:
        return []
    s = str(text).strip()
    if s.lower() in _NONE:
        return []
    out: list[str] = []
    for item in _split_top(s):
        parts = _GROUP_RE.split(item)  # [prefix, group, text, group, ..., suffix]
        if "[" in "".join(parts[0::2]) or "]" in "".join(parts[0::2]):
            raise HostlistError(f"nested or unbalanced brackets in host list {text!r}")
        names = [parts[0]]
        for k in range(1, len(parts), 2):
            vals = _expand_group(parts[k], s)
            names = [n + v + parts[k + 1] for n in names for v in vals]
        out.extend(names)
    return out


def natural_key(name: str):
    """Sort key that orders embedded numbers numerically (``n2`` < ``n10``)."""
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", name) if t != ""]


def compress_hostlist(names: Iterable[str]) -> str:
    """A compact host list for ``names`` (inverse of :func:`expand_hostlist` up to order).

    Names are grouped by their text before the last number and the number's width; runs of
    consecutive numbers become ranges. ``["n01", "n02", "n03", "x"]`` → ``"n[01-03],x"``.
    """
    groups: dict[tuple[str, int, str], list[int]] = {}
    plain: list[str] = []
    for n in dict.fromkeys(names):
        m = re.match(r"^(.*?)(\d+)(\D*)$", n)
        if not m:
            plain.append(n)
            continue
        pre, num, suf = m.groups()
        width = len(num) if num.startswith("0") and len(num) > 1 else 0
        groups.setdefault((pre, width, suf), []).append(int(num))
    out = []
    for (pre, width, suf), nums in sorted(groups.items(), key=lambda kv: natural_key(kv[0][0])):
        nums = sorted(set(nums))
        runs, start, prev = [], nums[0], nums[0]
        for x in nums[1:] + [None]:
            if x is not None and x == prev + 1:
                prev = x
                continue
            a, b = str(start).zfill(width), str(prev).zfill(width)
            runs.append(a if start == prev else f"{a}-{b}")
            if x is not None:
                start = prev = x
        if len(nums) == 1:
            out.append(f"{pre}{runs[0]}{suf}")
        else:
            out.append(f"{pre}[{','.join(runs)}]{suf}")
    return ",".join(out + plain)


class NodeIndex:
    """Maps hostnames to 0-based node indexes.

    ``NodeIndex(names)``: rank of each distinct name in natural order. ``NodeIndex.by_number(
    offset)``: the name's last number minus ``offset`` (``lassen17`` with offset 1 → 16).
    """

    def __init__(self, names: Iterable[str] = (), number_offset: int | None = None):
        self.number_offset = number_offset
        self.index: dict[str, int] = {}
        if number_offset is None:
            for i, n in enumerate(sorted(set(names), key=natural_key)):
                self.index[n] = i

    @classmethod
    def by_number(cls, offset: int = 0) -> "NodeIndex":
        return cls((), number_offset=offset)

    def __len__(self) -> int:
        return len(self.index)

    def __call__(self, name: str) -> int:
        if self.number_offset is not None:
            m = re.search(r"(\d+)\D*$", name)
            if not m:
                raise KeyError(f"node name {name!r} has no number")
            return int(m.group(1)) - self.number_offset
        return self.index[name]

    def ids(self, names: Sequence[str]) -> list[int]:
        """Indexes of ``names`` (sorted, as a recorded placement)."""
        return sorted(self(n) for n in names)


def replay_slots(start: Sequence[int | None], release: Sequence[int | None],
                 host_cores: Sequence[dict[int, int]], blocks: dict[int, tuple[int, int]],
                 ) -> tuple[list[list[int] | None], int, int]:
    """Translate per-host core counts into collision-free core-slot indexes.

    ``blocks[h] = (first_slot, size)``: host ``h`` owns slots ``[first, first + size)``. Jobs are
    replayed in (recorded start, position) order; a job's ``k`` cores on host ``h`` take the ``k``
    lowest free slots of that block and are freed at ``release`` (the recorded end, or start + 1
    for a zero-length job). Jobs without a start or hosts get None. A job on a host without a block
    gets None and is counted as unplaced; when a block is over-full (the trace over-subscribes a
    host) the job gets the block's first slots without holding them and is counted as a collision.

    Returns ``(slot_lists, collisions, unplaced)``.
    """
    n = len(start)
    free = {h: list(range(f, f + s)) for h, (f, s) in blocks.items()}  # sorted lists are heaps
    running: list[tuple[int, int, list[tuple[int, list[int]]]]] = []
    out: list[list[int] | None] = [None] * n
    collisions = unplaced = 0
    order = sorted((j for j in range(n) if start[j] is not None and host_cores[j]), key=lambda j: (start[j], j))
    for j in order:
        t = start[j]
        while running and running[0][0] <= t:
            _, _, held = heapq.heappop(running)
            for h, slots in held:
                for s in slots:
                    heapq.heappush(free[h], s)
        hc = host_cores[j]
        if any(h not in blocks for h in hc):
            unplaced += 1
            continue
        if all(len(free[h]) >= k for h, k in hc.items()):
            held = [(h, [heapq.heappop(free[h]) for _ in range(k)]) for h, k in hc.items()]
            heapq.heappush(running, (release[j], j, held))
            out[j] = sorted(s for _, sl in held for s in sl)
        else:
            collisions += 1
            out[j] = sorted(s for h, k in hc.items()
                            for s in range(blocks[h][0], blocks[h][0] + min(k, blocks[h][1])))
    return out, collisions, unplaced


def assign_core_slots(start: Sequence[int | None], release: Sequence[int | None],
                      host_cores: Sequence[dict[int, int]], cores_per_host: int,
                      hosts: int) -> tuple[list[list[int] | None], int]:
    """:func:`replay_slots` for ``hosts`` equal hosts: host ``h`` owns ``[h·c, (h+1)·c)`` with
    ``c = cores_per_host``; a job on a host outside ``[0, hosts)`` counts as a collision.

    Returns ``(slot_lists, collisions)``.
    """
    blocks = {h: (h * cores_per_host, cores_per_host) for h in range(hosts)}
    out, collisions, unplaced = replay_slots(start, release, host_cores, blocks)
    return out, collisions + unplaced
