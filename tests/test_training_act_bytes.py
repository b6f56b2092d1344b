"""The arrays each training row reads and writes, as the blocks declare them (forward and
recompute rows: the serving rows' declarations; a weight matmul's gradient rows: dX reads dY
and writes dX, dW reads X and dY), partitioned as tensor parallelism splits them, against
the row's own activation bytes: what each TP rank's activation bytes rest on.
"""

import fnmatch

import sympy as sp

import symroof as sr
from symroof.models.family_presets import FAMILY_PRESETS
from symroof.parallel.rows import tp_act_bytes, train_act_layout, undeclared
from symroof.parallel.train_rows import _b, train_rows
from symroof.symbols import B as _B
from symroof.symbols import T as _T

SEQ = 512

#: rows whose declared arrays do not account for their activation bytes, with the reason;
#: their bytes are split as their work is (TP splits attention's rows by heads, repeats the
#: D-wide backward rows on every rank)
NOT_DECLARED = {
    # training runs attention unfused: the scores [B, H, T, T] are no declared array, and
    # the blocks declare K and V as the cache a row reads (kv), not as activations
    "*/attn/scores": "score matrix", "*/attn/softmax": "score matrix",
    "*/attn/av": "score matrix", "bwd/attn/av/*": "score matrix",
    "bwd/attn/scores/*": "score matrix",
    # the loss (and Gemma-2's logit softcap's backward) is no block's declared row
    "fwd/loss": "no block", "bwd/loss": "no block", "bwd/logit_softcap": "no block",
    # the backward of ops that are not weight matmuls (norms, residual adds, activations,
    # gradient sums, RoPE, routing, embeddings): the backward graph does not declare them yet
    "bwd/*norm": "non-matmul backward", "bwd/*/post_norm": "non-matmul backward",
    "bwd/*residual": "non-matmul backward", "bwd/*/swiglu": "non-matmul backward",
    "bwd/*/geglu": "non-matmul backward", "bwd/*/gelu": "non-matmul backward",
    "bwd/*_sum": "non-matmul backward", "bwd/attn/rope": "non-matmul backward",
    "bwd/moe/combine": "non-matmul backward", "bwd/moe/route": "non-matmul backward",
    "bwd/moe/shared/scale": "non-matmul backward", "bwd/embed": "non-matmul backward",
    "bwd/pos_embed": "non-matmul backward",
    # MLA's kv_b_proj reads the kv_rank of the latent c (kv_rank + d_rope wide) it declares
    "*/attn/kv_b_proj": "MLA latent part", "bwd/attn/kv_b_proj/*": "MLA latent part",
}


def _expected_out(key):
    return any(fnmatch.fnmatchcase(key, p) for p in NOT_DECLARED)


def test_every_training_rows_declared_arrays_account_for_its_act_bytes():
    # every row of every family (remat full: its recompute rows too), one symbol for the
    # sequences: each row's declared arrays add up to its activation bytes exactly, but for
    # the rows listed above, and those listed are exactly the rows that do not
    for m in FAMILY_PRESETS:
        rows = train_rows(m, SEQ, "full")
        lay, _ = train_act_layout(m, SEQ)
        out = []
        for key, c in rows.items():
            if c.act_bytes == 0:
                continue
            rule = lay.rules.get(key)
            moved = (sp.Add(*(e for _, e in rule.moved)).xreplace({_B: _b, _T: SEQ})
                     if rule is not None else None)
            if moved is None or sp.expand(m.act_bytes * rule.repeats * moved
                                          - c.act_bytes) != 0:
                out.append(key)
        assert [k for k in out if not _expected_out(k)] == [], m.name
        assert [k for k in rows if _expected_out(k) and k not in out
                and rows[k].act_bytes != 0] == [], m.name
        assert undeclared(m, rows, SEQ) == out, m.name  # the plan reads the same set


def test_llama_tp4_a_projection_reads_its_input_whole_on_every_rank():
    # Llama-3.1-8B (its config.json: D = 4096, 32 heads of 128, F = 14336, 32 layers), bf16,
    # one sequence of 4096, TP = 4
    m = sr.model("llama-3.1-8b")
    acts = tp_act_bytes(m, train_rows(m, 4096, "none"), 4096, 4)
    # forward q_proj reads h[T, D] whole and writes its quarter of q[T, H d_h]:
    # 32 x 2 x 4096 x (4096 + 4096/4) (was the whole row over 4: 536,870,912)
    assert acts["fwd/attn/q_proj"][0].xreplace({_b: 1}) == 1_342_177_280
    # backward dX of mlp/down (da = dy W_down^T): reads dy[T, D] whole, writes its quarter
    # of da[T, F]: 32 x 2 x 4096 x (4096 + 14336/4) (was 1,207,959,552)
    assert acts["bwd/mlp/down/dx"][0].xreplace({_b: 1}) == 2_013_265_920
    # and dW of up (dW = h^T du) reads h whole and its quarter of du: the same as forward
    assert acts["bwd/mlp/up/dw"][0].xreplace({_b: 1}) == 32 * 2 * 4096 * (4096 + 14336 // 4)


def test_one_rank_keeps_every_rows_bytes():
    # on one TP rank nothing is split: no row's bytes are replaced
    m = sr.model("llama-3.1-8b")
    assert tp_act_bytes(m, train_rows(m, 4096, "none"), 4096, 1) == {}
