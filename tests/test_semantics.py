"""Every row of the semantics table, on hand-made scenes.

Each case is checked with the slow interpreter (the specification) *and* the
bit-sliced executor, against truth values worked out by hand.
"""
import pytest

from bayes_concepts.engine import evaluate, evaluate_programs, signature_bits
from bayes_concepts.scenes import CLEVR_SCHEMA, CURI_SCHEMA, SceneBank


def obj(color="gray", shape="cube", material="rubber", size="small", x=1, y=1):
    return {"color": color, "shape": shape, "material": material, "size": size, "x": x, "y": y}


def scene(*objects):
    return {"objects": list(objects)}


def labels(program, scenes, schema=CURI_SCHEMA):
    """Truth values by the interpreter; asserts the executor agrees."""
    slow = [evaluate(program, s) for s in scenes]
    bank = SceneBank.from_scenes(scenes, schema)
    fast = signature_bits(evaluate_programs([program], bank), bank.n_scenes)[0].tolist()
    assert fast == slow, f"executor {fast} != interpreter {slow} for {program}"
    return slow


RED_CUBE = obj("red", "cube")
BLUE_SPHERE = obj("blue", "sphere", "metal", "large", 5, 7)
RED_CYL = obj("red", "cylinder", "metal", "large", 8, 2)

CASES = [
    # property of x, '=' against a constant, both operand orders
    ("x color? red = exists=", [scene(RED_CUBE), scene(BLUE_SPHERE), scene(BLUE_SPHERE, RED_CYL)], [1, 0, 1]),
    ("red x color? = exists=", [scene(RED_CUBE), scene(BLUE_SPHERE)], [1, 0]),
    ("x shape? sphere = for-all=", [scene(BLUE_SPHERE), scene(BLUE_SPHERE, RED_CUBE)], [1, 0]),
    ("x material? metal = exists=", [scene(RED_CUBE), scene(RED_CYL)], [0, 1]),
    # '=' between two properties of x of the same type (locations)
    ("x locationX? x locationY? = exists=", [scene(obj(x=3, y=3)), scene(obj(x=3, y=4))], [1, 0]),
    # '>' on size: small < large
    ("x size? small > exists=", [scene(obj(size="large")), scene(obj(size="small"))], [1, 0]),
    ("large x size? > exists=", [scene(obj(size="large")), scene(obj(size="small"))], [0, 1]),
    # '>' on locations, both orders, and property against property
    ("x locationY? 6 > exists=", [scene(obj(y=6)), scene(obj(y=7)), scene(obj(y=8))], [0, 1, 1]),
    ("6 x locationY? > exists=", [scene(obj(y=6)), scene(obj(y=5)), scene(obj(y=1))], [0, 1, 1]),
    ("x locationX? x locationY? > for-all=", [scene(obj(x=4, y=3)), scene(obj(x=4, y=3), obj(x=2, y=2))], [1, 0]),
    # and / or / not
    ("x color? red = x shape? cube = and exists=",
     [scene(RED_CUBE), scene(RED_CYL), scene(RED_CYL, obj("blue", "cube"))], [1, 0, 0]),
    ("x color? blue = x shape? cylinder = or exists=", [scene(RED_CUBE), scene(RED_CYL), scene(BLUE_SPHERE)],
     [0, 1, 1]),
    ("x color? red = not for-all=", [scene(BLUE_SPHERE), scene(BLUE_SPHERE, RED_CUBE)], [1, 0]),
    # set quantifiers over S (lists of properties)
    ("S color? red exists=", [scene(RED_CUBE, BLUE_SPHERE), scene(BLUE_SPHERE)], [1, 0]),
    ("S color? red for-all=", [scene(RED_CUBE, RED_CYL), scene(RED_CUBE, BLUE_SPHERE)], [1, 0]),
    ("S locationX? 8 for-all=", [scene(obj(x=8)), scene(obj(x=8), obj(x=7))], [1, 0]),
    # count= compared with '=' and '>' in both operand orders
    ("S color? red count= 2 =", [scene(RED_CUBE, RED_CYL), scene(RED_CUBE), scene(RED_CUBE, RED_CYL, RED_CUBE)],
     [1, 0, 0]),
    ("2 S color? red count= =", [scene(RED_CUBE, RED_CYL), scene(RED_CUBE)], [1, 0]),
    ("S color? red count= 1 >", [scene(RED_CUBE, RED_CYL), scene(RED_CUBE), scene(BLUE_SPHERE)], [1, 0, 0]),
    ("1 S color? red count= >", [scene(RED_CUBE, RED_CYL), scene(RED_CUBE), scene(BLUE_SPHERE)], [0, 0, 1]),
    ("S shape? cube count= S shape? sphere count= >",
     [scene(RED_CUBE, RED_CUBE, BLUE_SPHERE), scene(RED_CUBE, BLUE_SPHERE), scene(BLUE_SPHERE)], [1, 0, 0]),
    ("S shape? cube count= S color? red count= =", [scene(RED_CUBE), scene(RED_CYL), scene(BLUE_SPHERE)], [1, 0, 1]),
    # count of objects sharing x's property (x itself included in S)
    ("S color? x color? count= 2 = exists=", [scene(RED_CUBE, RED_CYL), scene(RED_CUBE, BLUE_SPHERE)], [1, 0]),
    # non-x-S: all objects but x
    ("non-x-S color? red exists= exists=", [scene(RED_CUBE), scene(RED_CUBE, BLUE_SPHERE), scene(RED_CUBE, RED_CYL)],
     [0, 1, 1]),
    ("non-x-S color? x color? exists= exists=", [scene(RED_CUBE, RED_CYL), scene(RED_CUBE, BLUE_SPHERE)], [1, 0]),
    ("non-x-S color? x color? count= 0 = for-all=",
     [scene(RED_CUBE, BLUE_SPHERE), scene(RED_CUBE, RED_CYL), scene(RED_CUBE)], [1, 0, 1]),
    ("2 non-x-S color? cyan count= = exists=",
     [scene(obj("cyan"), obj("cyan"), obj("red")), scene(obj("cyan"), obj("cyan")), scene(obj("cyan"))],
     [1, 0, 0]),
    # empty-list rules: on a one-object scene S−x is empty; for-all= and exists= are False on it
    ("non-x-S color? red for-all= exists=", [scene(RED_CUBE), scene(BLUE_SPHERE, RED_CUBE), scene(RED_CUBE, RED_CYL)],
     [0, 1, 1]),
    ("non-x-S color? red for-all= not exists=", [scene(RED_CUBE)], [1]),
    ("non-x-S color? red exists= not exists=", [scene(RED_CUBE)], [1]),
    ("non-x-S size? large count= 0 = exists=", [scene(RED_CUBE)], [1]),
    # location ordering across objects: some object is right of all others
    ("non-x-S locationX? x locationX? count= 0 = x locationX? 4 > and exists=",
     [scene(obj(x=5), obj(x=3)), scene(obj(x=5), obj(x=5)), scene(obj(x=2))], [1, 0, 0]),
    # final quantifiers over x ∈ S
    ("x size? large = exists=", [scene(RED_CUBE, BLUE_SPHERE), scene(RED_CUBE)], [1, 0]),
    ("x size? large = for-all=", [scene(RED_CYL, BLUE_SPHERE), scene(RED_CUBE, BLUE_SPHERE)], [1, 0]),
    # a program without x: the quantifier does not change its meaning; collapsed form too
    ("S color? red exists= for-all=", [scene(RED_CUBE, BLUE_SPHERE), scene(BLUE_SPHERE)], [1, 0]),
    # constant comparisons (parsed, never sampled)
    ("3 3 =", [scene(RED_CUBE)], [1]),
    ("small large >", [scene(RED_CUBE)], [0]),
]


@pytest.mark.parametrize("program, scenes, expected", CASES)
def test_semantics_table(program, scenes, expected):
    assert labels(program, scenes) == [bool(e) for e in expected]


def test_ten_object_scenes():
    ten = scene(*[obj("red" if i % 2 else "blue", x=i % 8 + 1, y=1) for i in range(10)])
    nine = scene(*[obj("red" if i % 2 else "blue") for i in range(9)])
    assert labels("S color? red count= 3 >", [ten, nine], CLEVR_SCHEMA) == [True, True]
    assert labels("S color? red count= 5 =", [ten, nine], CLEVR_SCHEMA) == [True, False]
    assert labels("non-x-S color? x color? count= 4 = exists=", [ten, nine], CLEVR_SCHEMA) == [True, True]
    assert labels("x locationX? 7 > exists=", [ten, nine], CLEVR_SCHEMA) == [True, False]
