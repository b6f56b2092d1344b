"""Which switch level a GPU condition reads (convention ``gpu_level``), pinned to ch. 12.

How to Scale Your Model, ch. 12 ("Rooflines for LLM Scaling on GPUs"), solves DP and FSDP
on GPUs as B/X > C / W_coll with W_coll = W_GPU inside the NVLink domain and W_node beyond
it: "990e12/450e9 in a node, 990e12/400e9 across nodes" (2200 and 2475 tokens a GPU), and
for a few nodes B/N > alpha (X - 1)/X. symroof reads every level a group spans (the slowest
binds) with the ring's (N - 1)/N; "book" reads the one level and drops the ring factor.
The book's C is 990e12; the h100 record's is 989e12, so its figures scale by 989/990.
"""

from __future__ import annotations

import pytest
import sympy as sp

import symroof as sr
from symroof.conventions import profile, using

BOOK_C = 990 * 10**12  # ch. 12's H100 bf16 FLOP/s
RECORD = sp.Rational(989, 990)  # the record's 989e12 over the book's C
ONE_LEVEL = profile("symroof").replace(gpu_level="one")


def _fsdp(shape: dict, conventions) -> sp.Expr:
    """The per-GPU batch ZeRO-3 needs on ``shape`` of H100s, from the training plan, solved
    from the book's MLP block (its closed forms are of that layer; the book's own profile
    picks it, symroof's solves from a whole layer unless told)."""
    conventions = profile(conventions).replace(condition_layer="mlp_block")
    with using(conventions):  # a plan's conditions are solved when first read: read here
        return sr.train_plan(sr.model("llama-3.1-70b"), sr.mesh("h100", shape), "zero3",
                             batch_tokens=2**22, seq=4096).conditions["fsdp"].threshold


@pytest.mark.parametrize("shape, book", [
    ({"X": 8}, sp.Rational(BOOK_C, 450 * 10**9)),  # ch. 12: 990e12/450e9 in a node, 2200
    ({"X": 2, "Y": 8}, sp.Rational(BOOK_C, 400 * 10**9)),  # across nodes: 990e12/400e9, 2475
    ({"X": 128, "Y": 8}, sp.Rational(BOOK_C, 400 * 10**9)),  # a SuperPod: the node's egress
])  # (the leaf level, W_node), not the spine above it
def test_book_profile_gives_the_books_dp_condition(shape, book):
    assert book in (2200, 2475)
    assert _fsdp(shape, "book") == book * RECORD


def test_symroof_reads_every_level_and_the_book_one():
    """Over two nodes NVLink binds for symroof (7/8 of C / W_GPU, 1923 a GPU, as in one
    node); the book's one level is the nodes' egress."""
    node, two = _fsdp({"X": 8}, "symroof"), _fsdp({"X": 2, "Y": 8}, "symroof")
    assert node == two == sp.Rational(7, 8) * 989 * 10**12 / (450 * 10**9)
    assert _fsdp({"X": 2, "Y": 8}, "book") != two


def test_one_level_with_the_exact_ring_is_the_books_few_node_rule():
    """ch. 12, few-node DP: B/N > alpha (X - 1)/X over X nodes, alpha = C / W_node; X = 2:
    2475 / 2 = 1237.5 at the book's C."""
    few = sp.Rational(BOOK_C, 400 * 10**9) * sp.Rational(2 - 1, 2)
    assert few == sp.Rational(2475, 2)
    assert _fsdp({"X": 2, "Y": 8}, ONE_LEVEL) == few * RECORD


def test_nvl72_egress_is_the_books_w_node():
    """ch. 12: a GB200 NVL72 rack's egress is 3.6e12 B/s (4 x 18 x 400 Gb/s / 8); the book's
    cross-rack condition reads it; symroof's, the NVLink level that binds first."""
    racks, V = sr.mesh("gb200", {"R": 2, "G": 72}), 36 * 10**11
    assert sr.all_gather(racks, V, "RG", conventions="book").t_bw == 1  # V / W_node
    assert sr.all_gather(racks, V, "RG").t_bw == sp.Rational(71, 72) * V / (900 * 10**9)


def test_tpu_collectives_do_not_read_the_field():
    mesh = sr.mesh("tpu-v5e", "4x4")
    assert sr.all_gather(mesh, 10**9, "X", conventions=ONE_LEVEL) == \
        sr.all_gather(mesh, 10**9, "X")
