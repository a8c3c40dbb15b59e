"""Episodes: labels, hard and easy negatives, flags, seeds, errors, storage."""
import numba
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.episodes import EpisodeError, Episodes, EpisodeSampler


@pytest.fixture(scope="module")
def space():
    # not the shared small space: min_count=2 keeps rare concepts (< 10 positives) for the no-usable-concept test
    return HypothesisSpace.build(samples=30_000, scenes=20_000, seed=3, min_count=2)


@pytest.fixture(scope="module")
def sampler(space):
    return EpisodeSampler(space)


@pytest.fixture(scope="module")
def usable(space):
    return np.flatnonzero(space.counts >= 10)


def sets(eps, e):
    yield eps.support_scenes[e], eps.support_labels[e], eps.support_source[e], eps.support_topup[e], \
        eps.support_relabelled[e]
    yield eps.query_scenes[e], eps.query_labels[e], eps.query_source[e], eps.query_topup[e], eps.query_relabelled[e]


def test_per_scene_concept_bitsets_are_the_transpose(space):
    sc = space.scene_concepts()
    rng = np.random.default_rng(0)
    for s in rng.integers(0, space.n_scenes, 50):
        row = np.unpackbits(sc[s].view(np.uint8), bitorder="little")[: space.n_concepts].astype(bool)
        assert np.array_equal(row, np.asarray([space.signature(h)[s] for h in range(space.n_concepts)]))


@pytest.mark.parametrize("negatives", ["hard", "easy"])
def test_every_label_is_the_signature_bit(space, sampler, usable, negatives):
    eps = sampler.sample(usable, 300, negatives, seed=1)
    for e in range(len(eps)):
        sig = space.signature(eps.concept[e])
        seen = np.concatenate([eps.support_scenes[e], eps.query_scenes[e]])
        assert len(set(seen.tolist())) == len(seen)  # no scene twice in an episode
        for scenes, labels, *_ in sets(eps, e):
            assert np.array_equal(labels, sig[scenes].astype(np.int8))
            assert labels[:5].all()  # positives first


def test_hard_negatives_come_from_consistent_alternatives(space, sampler, usable):
    eps = sampler.sample(usable, 300, "hard", seed=2)
    assert eps.support_topup.sum() + eps.query_topup.sum() < eps.support_topup.size  # mostly real hard ones
    for e in range(len(eps)):
        h = eps.concept[e]
        for scenes, labels, source, topup, relabelled in sets(eps, e):
            assert not relabelled.any()
            positives = scenes[:5]
            for i in range(5, len(scenes)):
                assert labels[i] == 0
                if topup[i]:
                    assert source[i] == -1
                    continue
                a = source[i]
                assert a >= 0 and space.synonym_class(a) != space.synonym_class(h)
                sig_a = space.signature(a)
                assert sig_a[positives].all() and sig_a[scenes[i]]


def test_easy_negatives_are_relabelled_when_they_satisfy_the_concept(space, sampler, usable):
    # broad concepts make relabelling frequent
    broad = usable[np.argsort(-space.counts[usable])][:20]
    eps = sampler.sample(broad, 300, "easy", seed=3)
    neg = np.s_[:, 5:]
    assert np.array_equal(eps.support_relabelled[neg], eps.support_labels[neg] == 1)
    assert np.array_equal(eps.query_relabelled[neg], eps.query_labels[neg] == 1)
    assert eps.support_relabelled.any()
    assert (eps.support_source == -1).all() and not eps.support_topup.any()


def test_query_negatives_random_option(sampler, usable):
    eps = sampler.sample(usable, 100, "hard", query_negatives="random", seed=4)
    assert eps.meta["query_negatives"] == "random"
    assert (eps.query_source == -1).all() and not eps.query_topup.any()
    assert (eps.support_source[:, 5:] >= 0).any()


def test_seeded_and_thread_independent(sampler, usable):
    a = sampler.sample(usable, 200, "hard", seed=7)
    n = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        b = sampler.sample(usable, 200, "hard", seed=7)
    finally:
        numba.set_num_threads(n)
    assert a == b
    assert not np.array_equal(a.support_scenes, sampler.sample(usable, 200, "hard", seed=8).support_scenes)


def test_concepts_are_drawn_with_length_weights(space, sampler, usable):
    ids = usable[:2]
    eps = sampler.sample(ids, 20_000, "easy", seed=5)
    w = np.exp(-0.2 * space.lengths[ids])
    p0 = w[0] / w.sum()
    share = np.mean(eps.concept == ids[0])
    assert abs(share - p0) < 4 * np.sqrt(p0 * (1 - p0) / 20_000)


def test_no_usable_concept_is_a_clear_error(space, sampler):
    rare = np.flatnonzero(space.counts < 10)
    assert len(rare)  # min_count=2 keeps some rare concepts
    with pytest.raises(EpisodeError, match="no concept on this side has 10 or more positive scenes"):
        sampler.sample(rare, 10, "hard")
    with pytest.raises(EpisodeError, match=r"\(0 concepts on the side\)"):
        sampler.sample([], 10, "hard")


def test_save_and_load_round_trip(tmp_path, sampler, usable):
    eps = sampler.sample(usable, 50, "hard", seed=9, meta={"split": "x", "side": "test"})
    path = eps.save(tmp_path / "eps.npz")
    assert Episodes.load(path) == eps
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(EpisodeError, match="bad.npz: cannot read episodes"):
        Episodes.load(tmp_path / "bad.npz")


@pytest.mark.parametrize("explicit", [1.0, 0.0])
def test_union_mode_hard_negatives_come_from_consistent_alternatives(space, sampler, usable, monkeypatch, explicit):
    import bayes_concepts.episodes as E
    monkeypatch.setattr(E, "UNION_EXPLICIT", explicit)
    eps = sampler.sample(usable, 200, "hard", seed=12, hard_mode="union")
    assert eps.meta["hard_mode"] == "union"
    real = 0
    for e in range(len(eps)):
        h = eps.concept[e]
        sig_h = space.signature(h)
        for scenes, labels, source, topup, _ in sets(eps, e):
            assert np.array_equal(labels, sig_h[scenes].astype(np.int8))
            for i in range(5, len(scenes)):
                if topup[i]:
                    continue
                real += 1
                a = source[i]
                assert space.synonym_class(a) != space.synonym_class(h)
                assert space.signature(a)[scenes[:5]].all() and space.signature(a)[scenes[i]]
    assert real > 0
    with pytest.raises(ValueError, match="hard-negative mode"):
        sampler.sample(usable, 2, "hard", hard_mode="nope")


def union_positions(space, sampler, eps, rng):
    """For every union hard negative (not a top-up), its position in its pool -- the scenes of
    the union of the set's alternatives outside ext(h) not used before it, ordered by how many
    alternatives are true on them, then by id -- jittered into (0, 1): uniform draws give
    Uniform(0, 1) positions (slow twin of the kernel)."""
    from bayes_concepts.bits import unpack_bits
    out = []
    for e in range(len(eps)):
        h = int(eps.concept[e])
        outside = ~space.signature(h)
        used = list(eps.support_scenes[e, :5]) + list(eps.query_scenes[e, :5])
        for scenes, _, _, topup, _ in sets(eps, e):
            alts = sampler.alternatives(h, scenes[:5])
            cover = np.zeros(space.n_scenes, np.int64)
            for a in alts:
                cover += unpack_bits(np.asarray(space.signatures[a]), space.n_scenes)
            for i in range(5, len(scenes)):
                if not topup[i]:
                    pool = (cover > 0) & outside
                    pool[used] = False
                    ids = np.flatnonzero(pool)
                    ids = ids[np.argsort(cover[ids], kind="stable")]
                    rank = int(np.flatnonzero(ids == scenes[i])[0])
                    out.append((rank + rng.random()) / len(ids))
                used.append(scenes[i])
    return np.array(out)


@pytest.mark.parametrize("scan, explicit", [(0.0, 1.0), (1e12, 1.0), (1e12, 0.0)])
def test_union_negatives_are_uniform_on_the_union_every_way(space, sampler, usable, monkeypatch, scan, explicit):
    """Union hard negatives are drawn uniformly from the alternatives' union outside ext(h),
    by scanning the bank (broad unions), by alternative-weighted rejection, and from the
    union built explicitly (``explicit`` 0: always)."""
    from scipy.stats import kstest
    import bayes_concepts.episodes as E
    monkeypatch.setattr(E, "UNION_SCAN", scan)
    monkeypatch.setattr(E, "UNION_EXPLICIT", explicit)
    eps = sampler.sample(usable, 150, "hard", seed=21, hard_mode="union")
    pos = union_positions(space, sampler, eps, np.random.default_rng(0))
    assert len(pos) > 2000
    assert kstest(pos, "uniform").pvalue > 1e-3
    # the statistic has power: the 'alternative' mode (alternative first) is not uniform
    eps = sampler.sample(usable, 150, "hard", seed=21, hard_mode="alternative")
    assert kstest(union_positions(space, sampler, eps, np.random.default_rng(0)), "uniform").pvalue < 1e-3


def _words(draw_words, n_words):
    """uint64 (n_words,) from a list of Python ints (hypothesis), steered to empty and full words."""
    return np.array(draw_words[:n_words] + [0] * (n_words - len(draw_words[:n_words])), np.uint64)


_word = st.one_of(st.just(0), st.just(2**64 - 1), st.sampled_from([1, 2**63]), st.integers(0, 2**64 - 1))


@settings(max_examples=300, deadline=None)
@given(n_words=st.integers(1, 9), mask=st.lists(_word, max_size=9), row=st.lists(_word, max_size=9))
def test_alternative_scans_of_the_nonzero_words_equal_the_whole_row_scans(n_words, mask, row):
    """The sampler reads only the words of a scene's row where the set's alternatives have bits
    (``bits.nonzero_words``): its lowest alternative true on the scene and the number true equal
    those of a scan of the whole row (slow twin: Python over every bit), empty masks and rows,
    full words and the last bit included."""
    import bayes_concepts.episodes as E
    from bayes_concepts.bits import nonzero_words
    alt_mask, row = _words(mask, n_words), _words(row, n_words)
    listed = np.full(n_words, -7, np.int64)
    n = nonzero_words(alt_mask, listed)
    assert n == np.count_nonzero(alt_mask) and listed[:n].tolist() == np.flatnonzero(alt_mask).tolist()
    bits = [w * 64 + b for w in range(n_words) for b in range(64)
            if (int(row[w]) >> b) & 1 and (int(alt_mask[w]) >> b) & 1]
    assert E._first_alternative(row, alt_mask, listed, n) == (bits[0] if bits else -1)
    assert E._cover(row, alt_mask, listed, n) == len(bits)


@pytest.mark.parametrize("explicit", [1.0, 0.0])
def test_union_negatives_drawn_by_scene_name_the_lowest_alternative(space, sampler, usable, monkeypatch, explicit):
    """A union hard negative drawn as a scene (scanning the bank, or from the union built
    explicitly) names as its source the lowest alternative true on it (slow twin: every
    alternative's signature bit)."""
    import bayes_concepts.episodes as E
    monkeypatch.setattr(E, "UNION_SCAN", 0.0)  # always scan the bank, never an alternative first
    monkeypatch.setattr(E, "UNION_EXPLICIT", explicit)
    eps = sampler.sample(usable, 100, "hard", seed=5, hard_mode="union")
    sig = np.asarray(space.signatures)
    real = 0
    for e in range(len(eps)):
        h = int(eps.concept[e])
        for scenes, _, source, topup, _ in sets(eps, e):
            alts = sampler.alternatives(h, scenes[:5])
            for i in range(5, len(scenes)):
                if not topup[i]:
                    s = int(scenes[i])
                    true_on = alts[(sig[alts, s >> 6] >> np.uint64(s & 63)) & np.uint64(1) == 1]
                    assert source[i] == true_on.min()
                    real += 1
    assert real > 500
