"""The order in which a request fills the topology's domains: BestFit.

A cloud's hosts sit in nested domains (blocks, racks, hosts). Given how
many VMs of the request each host can take (its *room*), :func:`arrange`
orders the hosts so that the packing that follows fills as few domains as
possible and leaves the largest free domains whole, the way Kueue's
topology-aware scheduling does and documents as BestFit:

* Innermost first: find the innermost level at which one domain can hold
  the whole request, and there the domain with the least room that can
  (the best fit). A request that fits in a rack goes to the tightest such
  rack, wherever it is; one that fits in no rack goes to the tightest
  block that holds it, and spreads over as few of its racks as possible.
* When no domain of a level holds the request, it spills over that level's
  domains: the one with the most room first, until the rest fits in one,
  and then the tightest that holds the rest.
* An application that already runs (a server group growing) looks first
  at the domains that hold its VMs.
* Whatever the request does not need follows, largest domains first, so
  that the packing can go on when a host turns out to take fewer VMs than
  its room promised, and alternates come from nearby.

Seed 003's rack ordering is the one-level case without the best fit: the
rack with the most room first. Clouds that keep that single level keep it
exactly (:mod:`~hpc_nova_scheduler.core.algorithm` orders racks itself for them).

Everything here works on positions into the caller's arrays and is
independent of Nova and of the rules that decided the room.
"""

from __future__ import annotations

import numpy as np

from hpc_nova_scheduler.core.domains import SLACK as SLACK
from hpc_nova_scheduler.core.domains import DomainOrder, Held
from hpc_nova_scheduler.core.domains import domain_rooms as domain_rooms


def _at(held: Held, level: int) -> np.ndarray | None:
    return None if held is None else held[level]


def sorter(values: np.ndarray) -> np.ndarray:
    return np.argsort(values, kind="stable")


def _best_fit(codes: np.ndarray, room, own, idx, top: int, need: float, held: Held):
    """(level, domain) of the innermost, tightest domain under ``idx`` that
    holds ``need``; domains holding the application are tried first."""
    holds = bool(own[idx].any()) or any(
        h is not None and len(h) for h in (held[top:] if held is not None else ())
    )
    for owned_only in (True, False) if holds else (False,):
        for level in range(len(codes) - 1, top - 1, -1):
            domains, rooms, owned = domain_rooms(codes[level], room, own, idx, _at(held, level))
            fits = rooms >= need - SLACK
            if owned_only:
                fits &= owned
            if fits.any():
                found = np.flatnonzero(fits)
                # Equal rooms: the one inside the tighter rack, block... wins,
                # so that the roomier outer domains stay whole too.
                members = idx[sorter(codes[level][idx])][
                    np.searchsorted(np.sort(codes[level][idx]), domains[found])
                ]
                keys = [domains[found]]
                for outer in range(top, level):
                    outer_domains, outer_rooms, _ = domain_rooms(codes[outer], room, own, idx)
                    keys.append(outer_rooms[np.searchsorted(outer_domains, codes[outer][members])])
                keys.append(rooms[found])
                best = found[np.lexsort(tuple(keys))[0]]
                return level, domains[best]
    return None


def largest_first(codes: np.ndarray, room, own, idx: np.ndarray, held: Held = None) -> np.ndarray:
    """``idx`` with the application's domains first, then the roomiest, at
    every level from the outermost; hosts by room, then position.

    With one level this is seed 003's order: racks by room, largest first
    (the rack name breaking ties), hosts within a rack by room.
    """
    keys: list[np.ndarray] = [idx, -room[idx]]
    for level in range(len(codes) - 1, -1, -1):
        domains, rooms, owned = domain_rooms(codes[level], room, own, idx, _at(held, level))
        where = np.searchsorted(domains, codes[level][idx])
        keys += [codes[level][idx], -rooms[where], ~owned[where]]
    return idx[np.lexsort(tuple(keys))]


def _items(room, idx: np.ndarray, need: float, fit: bool) -> np.ndarray:
    """The hosts (or items) of one innermost domain, in the order to take them."""
    if not fit:
        return idx[np.lexsort((idx, -room[idx]))]
    ordered = idx[np.lexsort((idx, room[idx]))]
    chosen: list[int] = []
    left = ordered.tolist()
    while need > SLACK and left:
        fitting = [i for i in left if room[i] >= need - SLACK]
        pick = fitting[0] if fitting else max(left, key=lambda i: (room[i], -i))
        chosen.append(pick)
        left.remove(pick)
        need -= room[pick]
    rest = sorted(left, key=lambda i: (-room[i], i))
    return np.array(chosen + rest, dtype=np.int64)


def arrange(
    codes: np.ndarray,
    room: np.ndarray,
    own: np.ndarray,
    idx: np.ndarray,
    need: float,
    fit_items: bool = False,
    held: Held = None,
) -> np.ndarray:
    """``idx`` in the order that fills the fewest, tightest domains with ``need``.

    ``codes`` holds one row per level, outermost first, of every position's
    domain code (the rows of ``idx`` all sit in one domain of the level
    above the first row). ``room`` and ``own`` are per position.
    ``fit_items``: order the positions inside an innermost domain by best
    fit too (when each is a domain of its own, or a host the request may
    fill), rather than by room alone. ``held``: per level, aligned with
    ``codes``, the codes of the domains the application already holds.
    """
    idx = np.asarray(idx, dtype=np.int64)
    return _arrange(codes, room, own.astype(bool), idx, 0, need, fit_items, held)


def _arrange(codes, room, own, idx, level: int, need: float, fit_items: bool, held: Held):
    if level == len(codes):
        return _items(room, idx, need, fit_items)
    if not idx.size:
        return idx
    domains, rooms, owned = domain_rooms(codes[level], room, own, idx, _at(held, level))
    sequence: list[tuple[int, float]] = []
    fit = _best_fit(codes, room, own, idx, level, need, held) if need > SLACK else None
    left = list(range(len(domains)))
    if fit is not None:
        fit_level, fit_domain = fit
        member = idx[np.flatnonzero(codes[fit_level][idx] == fit_domain)[0]]
        first = int(np.searchsorted(domains, codes[level][member]))
        sequence.append((first, need))
        left.remove(first)
    else:
        remaining = need
        while remaining > SLACK and left:
            fitting = [d for d in left if rooms[d] >= remaining - SLACK]
            if fitting:
                pick = min(fitting, key=lambda d: (not owned[d], rooms[d], domains[d]))
            else:
                pick = min(left, key=lambda d: (not owned[d], -rooms[d], domains[d]))
            sequence.append((pick, min(rooms[pick], remaining)))
            left.remove(pick)
            remaining -= rooms[pick]
    parts = []
    for d, share in sequence:
        members = idx[codes[level][idx] == domains[d]]
        parts.append(_arrange(codes, room, own, members, level + 1, share, fit_items, held))
    if left:
        # The domains taken are few: comparing with each beats np.isin's sort.
        rest_mask = np.ones(len(idx), dtype=bool)
        here = codes[level][idx]
        for d, _ in sequence:
            rest_mask &= here != domains[d]
        rest = idx[rest_mask]
        parts.append(
            largest_first(codes[level:], room, own, rest, None if held is None else held[level:])
        )
    return np.concatenate(parts) if parts else idx


def tightest_first(
    codes: np.ndarray, room, own, idx: np.ndarray, level: int, need: float, held: Held = None
) -> list[int]:
    """The domains of ``level`` under ``idx`` that can hold ``need``, best first.

    Best: one that holds the application already, then the one holding the
    innermost domain that can take ``need`` whole (and among those the
    tightest such domain), then the tightest, then by code. This is the
    order in which a required level's domains are tried.
    """
    domains, rooms, owned = domain_rooms(codes[level], room, own, idx, _at(held, level))
    eligible = rooms >= need - SLACK
    if not eligible.any():
        return []
    # For each eligible domain: the innermost level under it with a domain
    # that holds the request whole, and that domain's room.
    inner = np.full(len(domains), level)
    inner_room = rooms.copy()
    parent_of = np.searchsorted(domains, codes[level][idx])
    for deeper in range(level + 1, len(codes)):
        sub, sub_rooms, _ = domain_rooms(codes[deeper], room, own, idx)
        each = sub_rooms[np.searchsorted(sub, codes[deeper][idx])]
        holds = each >= need - SLACK
        if holds.any():
            tightest = np.full(len(domains), np.inf)
            np.minimum.at(tightest, parent_of[holds], each[holds])
            found = np.isfinite(tightest)
            inner[found] = deeper
            inner_room[found] = tightest[found]
    found = np.flatnonzero(eligible)
    order = np.lexsort(
        (domains[found], rooms[found], inner_room[found], -inner[found], ~owned[found])
    )
    return [int(domains[found[i]]) for i in order]


class BestFit(DomainOrder):
    """This module's order, as Algorithm 1 reaches it (``hpc_nova_scheduler.domain_orders``)."""

    def arrange(self, codes, room, own, idx, need, fit_items=False, held=None):
        return arrange(codes, room, own, idx, need, fit_items, held)

    def tightest_first(self, codes, room, own, idx, level, need, held=None):
        return tightest_first(codes, room, own, idx, level, need, held)
