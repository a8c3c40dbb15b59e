"""Box-World's walks over detected pieces: the last step of both ConceptWorld executors.

Both the fast executor (pieces found by shifted bitmaps, relations from offset tables) and
the slow interpreter (pieces found point by point, relations evaluated by their
definitions) hand this function the same object-level facts; what they compute up to that
point is what the tests compare.
"""
from __future__ import annotations

__all__ = ["boxworld_lengths"]


def boxworld_lengths(n_pieces: int, is_gem, locks, opens, max_n: int) -> tuple:
    """(solution lengths, distractor lengths): sets of n in 1..max_n.

    n_pieces: pieces 0..m-1; is_gem: bools (m,); locks: set of (L, O) -- lock L locks
    object O; opens: set of (K, L) -- key K opens lock L (K is never the gem).

    A lock is a piece that locks something; a free key is a piece that is not the gem, not
    a lock and not locked.  ``n`` is a solution length when from a free key n openings of
    distinct locks reach the gem (each opened lock yields the object it locks, a key
    unless it is the gem).  It is a distractor length when no free key reaches the gem at
    any length, and some free key K0 and distinct locks L1..Ln, with Li locking Oi, On the
    gem and O1..On-1 keys, have exactly one failing opening among K0->L1, O1->L2, ...,
    On-1->Ln.
    """
    locked_by = {}
    for lk, o in locks:
        locked_by.setdefault(lk, []).append(o)
    is_lock = set(locked_by)
    is_locked = {o for _, o in locks}
    free = [k for k in range(n_pieces) if not is_gem[k] and k not in is_lock and k not in is_locked]
    opened_by = {}
    for k, lk in opens:
        if not is_gem[k] and lk in is_lock:
            opened_by.setdefault(k, []).append(lk)
    solutions = set()

    def walk(key, visited, steps):
        for lk in opened_by.get(key, ()):
            if lk in visited:
                continue
            for o in locked_by[lk]:
                if is_gem[o]:
                    solutions.add(steps + 1)
                elif steps + 1 < max_n + len(is_lock):
                    walk(o, visited | {lk}, steps + 1)

    for k in free:
        walk(k, frozenset(), 0)
    distractors = set()
    if not solutions:
        locks_list = sorted(is_lock)

        def chain(key, visited, steps, broken):
            for lk in locks_list:
                if lk in visited:
                    continue
                b = broken + (0 if (key, lk) in opens and not is_gem[key] else 1)
                if b > 1:
                    continue
                for o in locked_by[lk]:
                    if is_gem[o]:
                        if b == 1 and steps + 1 <= max_n:
                            distractors.add(steps + 1)
                    elif steps + 1 < max_n:
                        chain(o, visited | {lk}, steps + 1, b)

        for k in free:
            chain(k, frozenset(), 0, 0)
    return {n for n in solutions if n <= max_n}, distractors
