"""The program parser against its slow twin, side by side in one process.

    python benchmarks/parse_speed.py [SPACE_DIR ...] [--rounds 5]

``SPACE_DIR`` defaults to ``spaces/clevr`` and ``spaces/curi`` (a clevr-preset space, relational
programs with ``where`` constraints, and a curi-preset one).  Every program of each space is
parsed by ``Program._parse_given`` (the parse itself, without the memo of ``Program.parse``) and
by the parser as it was before the one-pass parser, ``tests/parse_reference.py`` (the slow twin
the tests compare it with); rounds interleaved with the first rotating, the best round counting;
per space: ms per program of each and their ratio, twice: with each program dropped once made (the
parse's own cost) and with the round's programs kept, as the memo of ``Program.parse`` keeps them
(``_kept``: adds the full collections of Python's cyclic garbage collector, which walk every kept
node, the same work for both parsers); and whether every program of the two is equal (tokens,
constraints and syntax trees, node by node; it must be: the change is a speed change).
Writes ``benchmarks/results/parse_speed.json``.  Timings on a shared machine are noisy; the
ratio of the two, measured in the same rounds, is the figure.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from _summary import RESULTS, write_summary  # noqa: E402  (benchmarks/ is not a package)
from parse_reference import parse_given as reference  # noqa: E402  (the slow twin, tests/parse_reference.py)

import bayes_concepts as bc  # noqa: E402
from bayes_concepts.lot.program import Program  # noqa: E402


def one_pass(given, grammar):
    return Program._parse_given(given, grammar)


def equal(a: Program, b: Program) -> bool:
    """Tokens, constraints and syntax trees equal (trees compared node by node, field by field)."""
    if (a.tokens, [c for c, _ in a.constraints]) != (b.tokens, [c for c, _ in b.constraints]):
        return False
    todo = [(a.root, b.root)] + [(x, y) for (_, x), (_, y) in zip(a.constraints, b.constraints)]
    while todo:
        x, y = todo.pop()
        if (type(x), x.op, x.type, x.kind, x.position, len(x.children)) != \
                (type(y), y.op, y.type, y.kind, y.position, len(y.children)):
            return False
        todo.extend(zip(x.children, y.children))
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("spaces", nargs="*", default=["spaces/clevr", "spaces/curi"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json-out", default=str(RESULTS / "parse_speed.json"))
    args = ap.parse_args()
    cells = {}
    for path in args.spaces:
        space = bc.HypothesisSpace.load(path, verify=False)
        grammar, programs = space.grammar, [p.split() for p in space.programs]
        best = {(tag, mode): float("inf") for tag in ("before", "now") for mode in ("parse", "kept")}
        for r in range(args.rounds):
            pair = (("before", reference), ("now", one_pass))
            for tag, parse in (pair if r % 2 == 0 else pair[::-1]):
                t0 = time.perf_counter()
                for given in programs:  # each program dropped once made: the parse's own cost
                    parse(given, grammar)
                t1 = time.perf_counter()
                kept = [parse(given, grammar) for given in programs]  # kept, as the memo keeps them
                t2 = time.perf_counter()
                del kept
                best[tag, "parse"] = min(best[tag, "parse"], t1 - t0)
                best[tag, "kept"] = min(best[tag, "kept"], t2 - t1)
        before = [reference(given, grammar) for given in programs]
        now = [one_pass(given, grammar) for given in programs]
        same = len(before) == len(now) == len(programs) and all(map(equal, before, now))
        n_tokens = sum(len(p.tokens) + sum(len(c) for c, _ in p.constraints) for p in now)
        ms = {key: 1e3 * t / len(programs) for key, t in best.items()}
        cell = {"programs": len(programs), "tokens_per_program": n_tokens / len(programs),
                "with_constraints": sum(bool(p.constraints) for p in now),
                "ms_per_program_before": ms["before", "parse"], "ms_per_program_now": ms["now", "parse"],
                "ratio": best["before", "parse"] / best["now", "parse"],
                "ms_per_program_before_kept": ms["before", "kept"], "ms_per_program_now_kept": ms["now", "kept"],
                "ratio_kept": best["before", "kept"] / best["now", "kept"], "equal": bool(same)}
        del before, now
        cells[Path(path).name] = cell
        print(f"{Path(path).name}: {len(programs):,} programs, {cell['ms_per_program_before']:.4f} -> "
              f"{cell['ms_per_program_now']:.4f} ms/program (x{cell['ratio']:.2f}); kept: "
              f"{cell['ms_per_program_before_kept']:.4f} -> {cell['ms_per_program_now_kept']:.4f} ms/program "
              f"(x{cell['ratio_kept']:.2f}); equal: {same}", flush=True)
    out = write_summary(args.json_out, "parse_speed", cells, spaces=[str(s) for s in args.spaces],
                        rounds=args.rounds, before="tests/parse_reference.py (the parser before the one-pass parser)",
                        method="one process, Program._parse_given and its slow twin on every program of each space, "
                               "rounds interleaved (the first rotating), best round; 'parse': each program dropped once "
                               "made (the parse's own cost); 'kept': the round's programs kept, as the memo of "
                               "Program.parse keeps them (adds the cyclic garbage collector's full collections, which "
                               "walk every kept node; the same for both parsers); a shared 2-core machine (noisy: the "
                               "ratio is the figure)")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
