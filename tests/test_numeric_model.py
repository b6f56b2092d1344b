"""The NumPy transformer of symroof.numeric: correctness against independent twins, errors."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import symroof.numeric as numeric
from symroof.numeric import TINY, Config, KVCache, count_params, forward, init_params
from symroof.numeric import config as config_module
from symroof.numeric import counter as counter_module
from symroof.numeric import layers as layers_module
from symroof.numeric import model as model_module
from symroof.numeric import primitives as primitives_module
from symroof.numeric.layers import softmax
from symroof.numeric.primitives import PLAIN

MHA = Config(D=32, F=48, L=2, H=4, G=4, d_h=8, V=40, name="mha")
CONFIGS = [  # GQA, MHA, MQA, d_h != D/H with bias and tied embeddings, float dims galore
    TINY,
    MHA,
    Config(D=24, F=40, L=2, H=6, G=1, d_h=4, V=30, name="mqa"),
    Config(D=20, F=36, L=3, H=4, G=2, d_h=12, V=33, qkv_bias=True, tied=True, name="odd"),
]


def tokens(cfg, B, T, seed=0):
    return np.random.default_rng(seed).integers(0, cfg.V, size=(B, T))


def reference(params, cfg, toks):
    """Plain multi-head attention Llama, from the definitions, one sequence and head at a time.

    It never looks at G: it is only a twin of ``forward`` when G == H.
    """
    d_h = cfg.d_h
    T = toks.shape[1]
    freqs = cfg.rope_theta ** (-2 * np.arange(d_h // 2) / d_h)
    angle = np.arange(T)[:, None] * freqs[None, :]

    def rotate(v):  # v (T, d_h): (first half, second half) rotated as pairs
        a, b = v[:, : d_h // 2], v[:, d_h // 2 :]
        return np.hstack([a * np.cos(angle) - b * np.sin(angle),
                          b * np.cos(angle) + a * np.sin(angle)])

    def norm(v, w):
        return v / np.sqrt(np.mean(v**2, axis=-1, keepdims=True) + cfg.eps) * w

    out = []
    for seq in toks:
        x = params["embed"][seq]
        for p in params["layers"]:
            h = norm(x, p["attn_norm"])
            q, k, v = (h @ p[w] + p.get(b, 0.0) for w, b in (("wq", "bq"), ("wk", "bk"),
                                                               ("wv", "bv")))
            heads = []
            for i in range(cfg.H):
                cols = slice(i * d_h, (i + 1) * d_h)
                s = rotate(q[:, cols]) @ rotate(k[:, cols]).T / np.sqrt(d_h)
                s[np.triu_indices(T, 1)] = -np.inf
                w = np.exp(s - s.max(axis=1, keepdims=True))
                heads.append(w / w.sum(axis=1, keepdims=True) @ v[:, cols])
            x = x + np.hstack(heads) @ p["wo"]
            h = norm(x, p["mlp_norm"])
            g = h @ p["w_gate"]
            x = x + (g / (1 + np.exp(-g)) * (h @ p["w_up"])) @ p["w_down"]
        head = params["embed"].T if cfg.tied else params["lm_head"]
        out.append(norm(x, params["final_norm"]) @ head)
    return np.stack(out)


def as_mha(params, cfg):
    """GQA parameters rewritten as MHA: query head h gets a copy of KV head h // (H/G)."""
    R = cfg.H // cfg.G
    idx = np.concatenate([np.arange(cfg.d_h) + (h // R) * cfg.d_h for h in range(cfg.H)])
    layers = []
    for p in params["layers"]:
        p = dict(p, wk=p["wk"][:, idx], wv=p["wv"][:, idx])
        if "bk" in p:
            p.update(bk=p["bk"][idx], bv=p["bv"][idx])
        layers.append(p)
    return dict(params, layers=layers), cfg.replace(G=cfg.H)


@pytest.mark.parametrize("cfg", [MHA, Config(D=16, F=24, L=1, H=2, G=2, d_h=6, V=20,
                                                 qkv_bias=True, tied=True)])
def test_mha_equals_independent_reference(cfg):
    params, toks = init_params(cfg, seed=3), tokens(cfg, 2, 6)
    assert np.max(np.abs(forward(params, cfg, toks) - reference(params, cfg, toks))) < 1e-9


@pytest.mark.parametrize("cfg", CONFIGS)
def test_gqa_equals_mha_with_repeated_kv_heads(cfg):
    params, toks = init_params(cfg, seed=1), tokens(cfg, 2, 5)
    mha_params, mha_cfg = as_mha(params, cfg)
    want = reference(mha_params, mha_cfg, toks)
    assert np.max(np.abs(forward(params, cfg, toks) - want)) < 1e-9


@pytest.mark.parametrize("cfg", CONFIGS)
def test_cached_decoding_equals_full_recompute(cfg):
    B, T, prompt = 2, 9, 4
    params, toks = init_params(cfg, seed=2), tokens(cfg, B, T)
    full = forward(params, cfg, toks)
    cache = KVCache(cfg, B, max_len=1)  # forces the cache to grow
    steps = [forward(params, cfg, toks[:, :prompt], cache=cache)]
    steps += [forward(params, cfg, toks[:, i : i + 1], cache=cache) for i in range(prompt, T)]
    assert cache.length == T
    assert np.max(np.abs(np.concatenate(steps, axis=1) - full)) < 1e-9


def test_chunked_prefill_equals_full():
    params, toks = init_params(TINY), tokens(TINY, 3, 10)
    cache = KVCache(TINY, 3)
    parts = [forward(params, TINY, toks[:, a:b], cache=cache) for a, b in ((0, 3), (3, 7),
                                                                            (7, 10))]
    assert np.max(np.abs(np.concatenate(parts, axis=1) - forward(params, TINY, toks))) < 1e-9


def test_last_only_is_the_last_row():
    params, toks = init_params(TINY), tokens(TINY, 2, 6)
    last = forward(params, TINY, toks, last_only=True)
    assert last.shape == (2, 1, TINY.V)
    np.testing.assert_allclose(last[:, 0], forward(params, TINY, toks)[:, -1], rtol=0, atol=1e-12)


def test_tied_uses_the_embedding_as_head():
    cfg = TINY.replace(tied=True)
    params, toks = init_params(cfg), tokens(cfg, 1, 4)
    untied = dict(params, lm_head=params["embed"].T.copy())
    np.testing.assert_allclose(forward(params, cfg, toks),  # BLAS order may differ: 1e-12
                               forward(untied, cfg.replace(tied=False), toks), rtol=0, atol=1e-12)


def test_qkv_bias_is_used():
    cfg = TINY.replace(qkv_bias=True)
    params, toks = init_params(cfg), tokens(cfg, 1, 4)
    zeroed = dict(params, layers=[dict(p, bk=0 * p["bk"]) for p in params["layers"]])
    assert np.max(np.abs(forward(params, cfg, toks) - forward(zeroed, cfg, toks))) > 1e-6


def test_counted_and_uncounted_give_identical_logits():
    params, toks = init_params(TINY), tokens(TINY, 2, 5)
    counted = forward(params, TINY, toks, counter=numeric.Counter())
    np.testing.assert_array_equal(counted, forward(params, TINY, toks))


def test_float32_runs():
    params = init_params(TINY, dtype=np.float32)
    assert forward(params, TINY, tokens(TINY, 1, 3)).dtype == np.float32


def test_softmax_rows_sum_to_one_and_masked_weights_are_zero():
    T, c = 4, 3
    S = c + T
    keep = np.arange(S)[None, :] <= np.arange(c, S)[:, None]  # (T, S)
    scores = np.random.default_rng(0).standard_normal((2, 3, T, S)) * 5
    p = softmax(PLAIN, scores, keep, d_h=8)
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    assert np.all(p[..., ~keep] == 0) and np.all(p[..., keep] > 0)


def test_count_params_matches_the_matrices():
    cfg = TINY
    D, F, L, H, G, d_h, V = cfg.D, cfg.F, cfg.L, cfg.H, cfg.G, cfg.d_h, cfg.V
    attn = D*H*d_h + 2*D*G*d_h + H*d_h*D  # Wq + Wk + Wv + Wo
    mlp = 3*D*F  # gate, up, down
    assert count_params(init_params(cfg)) == V*D + L*(attn + mlp + 2*D) + D + D*V
    assert count_params(init_params(cfg.replace(tied=True))) == V*D + L*(attn + mlp + 2*D) + D


def test_init_is_seeded_and_activations_stay_order_one():
    a, b = init_params(TINY, seed=5), init_params(TINY, seed=5)
    np.testing.assert_array_equal(a["layers"][1]["w_down"], b["layers"][1]["w_down"])
    assert 0.3 < np.std(forward(a, TINY, tokens(TINY, 2, 8))) < 3


CONFIG_ERRORS = [  # (changes, message)
    ({"H": -2}, "H must be a positive integer, got -2"),
    ({"D": 0}, "D must be a positive integer, got 0"),
    ({"F": 2.0}, "F must be a positive integer, got 2.0"),
    ({"L": True}, "L must be a positive integer, got True"),
    ({"V": "256"}, "V must be a positive integer, got '256'"),
    ({"H": 32, "G": 5}, "H (32) must be divisible by G (5)"),
    ({"d_h": 7}, "d_h must be even (RoPE rotates pairs), got 7"),
    ({"eps": 0}, "eps must be a positive number, got 0"),
    ({"tied": 1}, "tied must be a bool, got 1"),
    ({"heads": 4}, "unknown Config fields ['heads']"),
]


@pytest.mark.parametrize("changes, message", CONFIG_ERRORS)
def test_config_errors_name_the_parameter(changes, message):
    with pytest.raises(ValueError) as info:
        TINY.replace(**changes)
    assert message in str(info.value)


def test_config_accepts_numpy_integers():
    assert TINY.replace(D=np.int64(64)) == TINY and type(TINY.replace(D=np.int64(64)).D) is int


FORWARD_ERRORS = [  # (tokens, cache, exception, message)
    (np.arange(4), None, ValueError, "tokens must be a 2-D integer array [B, T], got shape (4,)"),
    (np.zeros((1, 3)), None, ValueError, "tokens must be integers, got dtype float64"),
    (np.zeros((1, 0), int), None, ValueError, "T >= 1, got shape (1, 0)"),
    ([[1, 256]], None, ValueError, "tokens must lie in [0, V) = [0, 256), got 256"),
    ([[-1, 3]], None, ValueError, "got -1"),
    ([[1, 2]], KVCache(TINY, batch=3), ValueError, "cache batch (3) must equal"),
    ([[1, 2]], KVCache(TINY.replace(G=8), batch=1), ValueError, "cache was built for"),
    ([[1, 2]], "cache", TypeError, "cache must be a KVCache or None, got str"),
]


@pytest.mark.parametrize("toks, cache, exc, message", FORWARD_ERRORS)
def test_forward_errors_name_the_input(toks, cache, exc, message):
    with pytest.raises(exc) as info:
        forward(init_params(TINY), TINY, toks, cache=cache)
    assert message in str(info.value)


def test_params_that_do_not_fit_the_config():
    with pytest.raises(ValueError, match=r"params\['embed'\] must have shape \(V, D\)"):
        forward(init_params(TINY), TINY.replace(V=100), [[1]])
    with pytest.raises(ValueError, match="L = 3 layers, got 2"):
        forward(init_params(TINY), TINY.replace(L=3), [[1]])
    with pytest.raises(ValueError, match="lack the biases"):
        forward(init_params(TINY), TINY.replace(qkv_bias=True), [[1]])


@pytest.mark.parametrize("kwargs, message", [({"batch": 0}, "batch must be a positive integer"),
                                             ({"batch": 1, "max_len": -1}, "max_len")])
def test_cache_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        KVCache(TINY, **kwargs)


def test_public_names():
    assert {"Config", "TINY", "init_params", "count_params", "KVCache", "forward",
            "Counter"} <= set(numeric.__all__)
    assert all(hasattr(numeric, name) for name in numeric.__all__)


@pytest.mark.parametrize("module", [numeric, config_module, counter_module, layers_module,
                                    model_module, primitives_module], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    assert doctest.testmod(module, optionflags=flags).failed == 0
