"""The vectorised strategy search: every point equals ``train_plan`` of the same split, the
choice is the fastest split that fits and divides the batch, and the answers where none
does say why."""

from __future__ import annotations

import numpy as np
import pytest

import symroof as sr
from symroof.parallel.search import BOUNDS, EP_STRATEGIES, STRATEGIES, candidates, plan_of

L70 = sr.model("llama-3.1-70b")
MESHES = {
    "v5p cube": sr.mesh("tpu-v5p", "4x4x8"),
    "v5p two slices": sr.mesh("tpu-v5p", {"S": 2, "X": 4, "Y": 4, "Z": 4}, dcn="S"),
    "h100 superpod": sr.mesh("h100", {"X": 16, "Z": 8, "Y": 8}),
}
BATCHES = [2**20, 2**22]


@pytest.fixture(scope="module", params=list(MESHES))
def result(request):
    return sr.strategy_search(L70, MESHES[request.param], batch_tokens=BATCHES)


def test_every_point_equals_its_train_plan(result):
    for j, c in enumerate(result.candidates):
        if c.degrees["tp"] > L70.H or c.degrees["pp"] > L70.L:  # train_plan refuses these
            assert not np.isfinite(result.lower[:, j]).any()
            continue
        p = sr.train_plan(L70, c.mesh, c.strategy, batch_tokens=BATCHES[0],
                          microbatches=c.microbatches if c.axes["pp"] else None,
                          **{r: c.axes[r] or None for r in ("dp", "fsdp", "tp", "pp")})
        assert np.isclose(result.memory[0, j], float(p.memory_total), rtol=1e-12)
        if np.isfinite(result.lower[0, j]):
            assert np.isclose(result.lower[0, j], float(p.lower), rtol=1e-12)
            assert np.isclose(result.upper[0, j], float(p.upper), rtol=1e-12)
            assert BOUNDS[result.bound[0, j]] == p.bound
        else:
            assert not p.fits


def test_the_choice_is_the_fastest_that_fits(result):
    for i in range(len(BATCHES)):
        finite = np.isfinite(result.lower[i])
        j = result.best[i]
        assert finite.any() == (j >= 0)
        if j >= 0:
            assert result.lower[i, j] == result.lower[i, finite].min()
            assert result.memory[i, j] <= float(result.candidates[j].mesh.chip.hbm_bytes)
            c = result.choice(i)
            assert c["bound"] in BOUNDS and c["lower"] <= c["upper"]
            assert plan_of(result, i).fits


def test_tp_wider_than_the_heads_and_more_stages_than_layers_are_not_chosen():
    res = sr.strategy_search(L70, sr.mesh("tpu-v5p", "4x4x8"), batch_tokens=2**22,
                             strategies=("tp", "pp", "zero3"))
    names = [c.strategy for c in res.candidates]
    assert not np.isfinite(res.lower[0, names.index("tp")])  # 128 > 64 heads
    assert not np.isfinite(res.lower[0, names.index("pp")])  # 128 > 80 layers
    assert res.choice(0)["candidate"].strategy == "zero3"


def test_candidates_give_every_axis_to_one_role():
    cands = candidates(MESHES["v5p cube"], ("dp", "fsdp+tp", "zero1+tp+pp"))
    assert len(cands) == 1 + 6 + 6  # 3 axes: 1 way, 2^3 - 2 ways, 3! ways
    for c in cands:
        used = [a for axes in c.axes.values() for a in axes]
        assert sorted(used) == ["X", "Y", "Z"]


def test_nothing_fits_says_what_it_needs():
    res = sr.strategy_search("llama-3.1-405b", sr.mesh("tpu-v5e", "2x2"), batch_tokens=4096)
    assert res.best[0] == -1
    assert res.choice(0)["why"] == ("does not fit: needs 4.89 TB = 306 chips; no slice on "
                                    "record has them")
    small = sr.strategy_search(L70, sr.mesh("tpu-v5p", "4x4x4"), batch_tokens=2**22)
    assert small.why[0].endswith("the smallest slice with them is 4x4x8")


def test_no_split_divides_the_batch():
    res = sr.strategy_search(L70, sr.mesh("tpu-v5p", "4x4x4"), batch_tokens=3000, seq=1000,
                             strategies=("zero3",))
    assert res.why[0].startswith("no split that fits divides the batch")


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(batch_tokens=1000), ValueError, "whole numbers of sequences"),
    (dict(batch_tokens=[4096, -4096]), ValueError, "positive whole numbers"),
    (dict(batch_tokens=4096, strategies=("nope",)), ValueError, "unknown strategy part"),
])
def test_bad_input(kwargs, error, message):
    with pytest.raises(error, match=message):
        sr.strategy_search(L70, MESHES["v5p cube"], **kwargs)
    with pytest.raises(TypeError, match="needs a Mesh"):
        sr.strategy_search(L70, "tpu-v5p", batch_tokens=4096)


def test_many_points_in_one_call():
    batches = 4096 * np.arange(1, 2001)
    res = sr.strategy_search(L70, MESHES["v5p cube"], batch_tokens=batches)
    assert res.points >= 10**4 * 8 and res.lower.shape == (2000, len(res.candidates))
    assert (res.best >= 0).sum() > 0


def test_a_mixture_of_experts_is_searched_with_ep_too():
    mix, mesh = sr.model("mixtral-8x7b"), MESHES["v5p cube"]
    res = sr.strategy_search(mix, mesh, batch_tokens=2**21)
    names = [c.strategy for c in res.candidates]
    assert set(names) == set(STRATEGIES + EP_STRATEGIES)
    ep = [j for j, c in enumerate(res.candidates) if c.axes["ep"]]
    for j in ep:  # every point equals its train_plan
        c = res.candidates[j]
        if 8 % c.degrees["ep"]:  # 16 or 32 EP chips for 8 experts: never chosen
            assert not np.isfinite(res.lower[0, j])
            continue
        p = sr.train_plan(mix, mesh, c.strategy, batch_tokens=2**21,
                          microbatches=c.microbatches if c.axes["pp"] else None,
                          **{r: c.axes[r] or None for r in ("dp", "fsdp", "tp", "pp", "ep")})
        assert np.isclose(res.memory[0, j], float(p.memory_total), rtol=1e-12)
        if np.isfinite(res.lower[0, j]):
            assert np.isclose(res.lower[0, j], float(p.lower), rtol=1e-12)
            assert np.isclose(res.upper[0, j], float(p.upper), rtol=1e-12)
    dense = sr.strategy_search(L70, mesh, batch_tokens=2**21)
    assert len(dense.candidates) == len(candidates(mesh, STRATEGIES))  # no ep for a dense model
    with pytest.raises(ValueError, match="llama-3.1-70b is dense"):
        sr.strategy_search(L70, mesh, batch_tokens=2**21, strategies=("fsdp+ep",))
