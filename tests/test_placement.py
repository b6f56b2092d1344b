"""Plan rows that depend on where an axis sits, tested at each placement: inside a GPU node
(NVLink), across nodes (the NIC's share), over a TPU slice's ICI, across slices (DCN). The
expected bandwidths are typed from the sources, not read from the records."""

from fractions import Fraction

import pytest

import symroof as sr
from symroof.parallel.layout import role_links

G = 10**9
W_GPU = 18 * 25 * G  # H100 sheet: NVLink 900 GB/s bidirectional over 18 links
NIC = 400 * G // 8  # DGX H100: 8 x 400 Gb/s ConnectX-7 per 8 GPUs: 50 GB/s per GPU, one way
ICI = 90 * G  # book ch. 2: TPU v5p ICI 9e10 B/s per link one way
DCN = 25 * G // 4  # book ch. 5: a v5p host's 200 Gb/s for its 4 chips: 6.25e9 B/s per chip

#: (chip, shape, dcn axes, axis, the one-way B/s of one pipeline hop on it,
#:  (group size, B/s per chip) of an AllGather over it: (n - 1)/n V / B/s)
PLACEMENTS = {
    "inside a node": ("h100", "4x8", (), "Y", W_GPU, (8, W_GPU)),
    "across nodes": ("h100", "4x8", (), "X", NIC, (4, NIC)),
    "ICI in a slice": ("tpu-v5p", "4x4x4x2", ("W",), "Z", ICI, None),
    "across slices": ("tpu-v5p", "4x4x4x2", ("W",), "W", DCN, (2, DCN)),
}


@pytest.mark.parametrize("where", sorted(PLACEMENTS))
def test_pipeline_hop_and_gather_price_their_link(where):
    chip, shape, dcn, axis, hop, gather = PLACEMENTS[where]
    mesh = sr.mesh(chip, shape, dcn=dcn)
    links = role_links(mesh, {"pp": (axis,), "fsdp": (axis,)})
    assert links["pp"][0] == Fraction(1, hop)
    if gather is not None:
        n, bw = gather
        assert links["fsdp"][0] == Fraction(n - 1, n * bw)
    else:  # a wrapped ICI ring sends both ways: V / (2 W_1) (book ch. 3)
        assert links["fsdp"][0] == Fraction(1, 2 * ICI)


@pytest.mark.parametrize("where", sorted(PLACEMENTS))
def test_train_plan_sends_at_the_placement(where):
    chip, shape, dcn, axis, hop, _ = PLACEMENTS[where]
    mesh = sr.mesh(chip, shape, dcn=dcn)
    rest = "".join(a for a in mesh.names if a != axis)
    strategy, other = ("tp+pp", "tp") if chip == "h100" else ("fsdp+pp", "fsdp")
    plan = sr.train_plan("llama-3.1-8b", mesh, strategy, batch_tokens=2**20 * 2,
                         pp=axis, **{other: rest})
    sends = {k: c for k, c in plan.step.items() if "/pp/send" in k}
    assert sends, where
    for key, row in sends.items():  # bandwidth-bound: bytes over the hop's bandwidth
        assert row.net_time == row.net_bytes / hop, (where, key)
