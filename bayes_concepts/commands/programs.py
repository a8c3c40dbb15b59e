"""``explain``, ``eval`` and ``sample``: programs of the language, one command line at a time."""
from __future__ import annotations

import json

from ..command_registry import command
from ..options import check_depth_option, grammar_of, whole
from ..terminal import print_json


def _parse_programs(texts, grammar) -> list:
    """Parse the programs given on the command line with ``grammar``.  A program that fails
    in CURI's language (a grammar without relational operators or variables) on a token of
    the relational languages -- a variable such as ``y``, a binder such as ``filter:y``, a
    relational operator such as ``left`` -- gets a hint at the end of its one-line error:
    that token is unknown there, and such programs need a relational grammar."""
    from ..errors import ProgramError
    from ..lot import Program
    out = []
    for text in texts:
        try:
            out.append(Program.parse(text, grammar))
        except ProgramError as exc:
            hint = _relational_hint(exc, text, grammar)
            if hint is None:
                raise
            prefix = (f"in program {exc.program!r}, " if exc.program else "") + f"token {exc.position}: "
            message = str(exc)[len(prefix):] if str(exc).startswith(prefix) else str(exc)
            raise ProgramError(f"{message}; {hint}", exc.program, exc.position) from None
    return out


def _relational_hint(exc, text, grammar):
    """The hint of :func:`_parse_programs` for error ``exc`` of ``text``, or None."""
    import re
    from ..lot.operators import operators, split_binder
    if grammar.is_relational or exc.position is None:
        return None
    given = text.split() if isinstance(text, str) else list(text)
    if not 0 <= exc.position < len(given):
        return None
    tok = given[exc.position]
    if tok in grammar.token_kinds:
        return None
    name, var = split_binder(tok)
    if var is None and re.fullmatch(r"[a-z]", tok):  # an object variable of a relational language
        return (f"{tok} is unknown (unbound) in CURI's language, whose one object variable is x, bound by the final "
                f"exists=/for-all=: programs with variables such as {tok} need a relational grammar, e.g. "
                "--grammar hypotheses/clevr.pcfg")
    if name in operators and name not in grammar.operators:
        return (f"{name} is a relational operator, not one of CURI's language: give a grammar that declares it, "
                "e.g. --grammar hypotheses/clevr.pcfg")
    return None


def _explain_arguments(p):
    p.add_argument("program", nargs="+", help="postfix program (quote it, or give its tokens)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


@command("explain", order=10, arguments=_explain_arguments,
         help="show a program's readable form, LaTeX, length and PCFG log-prob (a relational program: with "
              "--grammar hypotheses/clevr.pcfg)")
def cmd_explain(args) -> int:
    from ..lot import rejection_reason
    from ..synonyms import unprovable_operators
    g = grammar_of(args)
    text = " ".join(args.program)
    (p,) = _parse_programs([text], g)
    unprovable = unprovable_operators(p)
    info = {
        "program": p.postfix,
        "readable": p.readable,
        "latex": p.latex,
        "prefix": p.prefix,
        "length": p.length,
        "log_pcfg": p.log_prob(),
        "uses_x": p.uses_x,
        "quantifier": p.quantifier,
        "rejected_by": rejection_reason(p),
        "not_provable": list(unprovable),
        "constraints": [c.postfix for c in p.constraint_programs],
        "domain": p.domain_text,
    }
    if args.json:
        print_json(info)  # a program the grammar cannot derive has log_pcfg -inf: null in JSON
        return 0
    rows = [("program", info["program"]), ("readable", info["readable"]), ("latex", info["latex"]),
            ("prefix", info["prefix"]), ("length", str(info["length"])),
            ("log p_pcfg", f"{info['log_pcfg']:.4f}"),
            ("uses x", "yes" if p.uses_x else "no (the quantifier can be collapsed)" if p.quantifier else "no"),
            ("quantifier", {"exists": "∃x∈S", "forall": "∀x∈S", None: "none"}[p.quantifier]),
            ("rejection", f"rejected by rule '{info['rejected_by']}'" if info["rejected_by"] else "kept"),
            ("domain", info["domain"])]
    if unprovable:
        rows.append(("synonyms", "not provable: the synonym prover does not reason about "
                                 f"{', '.join(unprovable)}; synonyms are decided by signatures only"))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    return 0


def _eval_arguments(p):
    p.add_argument("program", nargs="+", help="one or more postfix programs, each quoted")
    p.add_argument("--scenes", required=True, metavar="FILE.jsonl", help="scenes, one JSON object per line")
    p.add_argument("--max-objects", type=whole(1), default=None,
                   help="most objects a scene may have (default: the grammar's; CURI's 5, clevr.pcfg's 10)")
    p.add_argument("--json", action="store_true",
                   help='print {"<program>": [0, 1, ...]}; default: one line per scene, one label per program')


@command("eval", order=20, arguments=_eval_arguments,
         help="evaluate programs on the scenes of a JSON Lines file (with --grammar hypotheses/clevr.pcfg: "
              "relational programs on scenes with '3d_coords' or 'relationships')")
def cmd_eval(args) -> int:
    from ..engine import evaluate_programs, signature_bits
    from ..scenes import SceneBank, read_scenes_jsonl
    g = grammar_of(args)
    programs = _parse_programs(args.program, g)
    from ..scale import check_memory, scene_bank_bytes
    schema = g.schema.with_max_objects(args.max_objects or g.schema.max_objects)
    scenes = read_scenes_jsonl(args.scenes, schema)  # --max-objects bounds the objects a scene may have
    if not scenes:
        from ..errors import SceneError
        raise SceneError(f"--scenes {args.scenes}: no scenes in the file (it is empty or holds only blank lines)")
    # the bank has as many object slots as the file's largest scene, not --max-objects: the cost
    # follows the data (empty slots change no program's value)
    slots = max(schema.min_objects, max(len(s["objects"]) for s in scenes))
    schema = schema.with_max_objects(slots)
    check_memory(scene_bank_bytes(len(scenes), slots, schema.n_attributes, schema.n_relations),
                 f"--scenes {args.scenes}", "give fewer scenes", f"{len(scenes):,} scenes of up to {slots:,} objects")
    bank = SceneBank.from_scenes(scenes, schema)
    labels = signature_bits(evaluate_programs(programs, bank, g), bank.n_scenes).astype(int)
    if args.json:
        print(json.dumps({text: [int(v) for v in row] for text, row in zip(args.program, labels)},
                         ensure_ascii=False))
        return 0
    for j in range(len(scenes)):
        print(" ".join(str(int(row[j])) for row in labels))
    return 0


def _sample_arguments(p):
    p.add_argument("--n", type=whole(0), default=10, help="programs to draw (default 10)")
    p.add_argument("--seed", type=whole(0), default=0, help="seed of the draw (a whole number >= 0; default 0)")
    p.add_argument("--max-depth", type=whole(1), default=None,
                   help="maximum derivation depth, the start symbol at depth 0 (default: the grammar's, 6)")
    p.add_argument("--log-prob", action="store_true", help="print the PCFG log-probability before each program")


@command("sample", order=30, arguments=_sample_arguments, help="draw programs from the grammar")
def cmd_sample(args) -> int:
    from ..lot import sample_programs
    g = grammar_of(args)
    if args.max_depth is not None:
        check_depth_option(g, args.max_depth)
    sample = sample_programs(args.n, g, seed=args.seed, max_depth=args.max_depth)
    for s, lp in zip(sample.strings(), sample.log_prob):
        print(f"{lp:.4f}\t{s}" if args.log_prob else s)
    return 0
