"""Machines that exist: a mesh is checked against its chip's topology, refused with the
nearest shapes that can be had, or built as a hypothetical on purpose (``custom=True``).

Slice shapes are typed from Google Cloud's TPU pages (v5e: v5litepod-1 to -256 are 1x1, 2x2,
2x4, 4x4, 4x8, 8x8, 8x16, 16x16; v4/v5p: 2x2x1, 2x2x2, 2x2x4, 2x4x4, then whole 4x4x4
cubes), GPU node sizes from "How to Scale Your Model" ch. 12 (8 GPUs; 72 on GB200 NVL72)."""

import pytest

import symroof as sr
from symroof.surfaces.cli import main

V5E_SLICES = ["1x1", "2x2", "2x4", "4x4", "4x8", "8x8", "8x16", "16x16"]  # Google Cloud


@pytest.mark.parametrize("shape", V5E_SLICES + ["4x2", "16x8"])
def test_every_v5e_slice_builds(shape):
    assert not sr.mesh("tpu-v5e", shape).custom


def test_v5e_offers_exactly_the_cloud_slices():
    offered = ["x".join(map(str, sh)) for sh in sr.chip("tpu-v5e").network.offered()]
    assert offered == V5E_SLICES


@pytest.mark.parametrize("chip, shape, nearest", [
    ("tpu-v5e", "3x5", "4x4, 2x4, 4x8"),        # 15 chips: 16, 8 and 32 are nearest
    ("tpu-v5e", "1x2", "1x1, 2x2, 2x4"),
    ("tpu-v6e", {"X": 8}, "2x4, 2x2, 4x4"),
    ("tpu-v5p", "4x4", "2x2x4, 2x4x4, 2x2x2"),   # a 3-D torus has no 2-D slices
    ("tpu-v5p", "4x4x6", "4x4x8, 4x4x4, 4x4x12"),  # not whole cubes: 96 -> 128, 64
])
def test_impossible_tpu_slices_name_the_nearest(chip, shape, nearest):
    with pytest.raises(ValueError, match=f"offers no .* slice; the nearest it offers: {nearest} "
                                         r"\(or custom=True"):
        sr.mesh(chip, shape)


@pytest.mark.parametrize("shape", ["2x2x1", "2x2x4", "2x4x4", "4x4x8", "8x12x16", "16x20x28"])
def test_v5p_slices_below_a_cube_and_of_whole_cubes_build(shape):
    assert sr.mesh("tpu-v5p", shape).n_chips > 0


@pytest.mark.parametrize("axes, message", [
    ({"X": 9}, "a mesh of 9 h100 GPUs is not whole 8-GPU nodes .* nearest that are: 8 or 16"),
    ({"X": 4, "Y": 6}, "axis Y = 6 does not tile 8-GPU nodes.*sizes of Y that do: 4, 8, 2"),
    ({"X": 8, "Y": 3}, "axis Y = 3 does not tile"),
])
def test_impossible_gpu_meshes_are_refused(axes, message):
    with pytest.raises(ValueError, match=message):
        sr.mesh("h100", axes)


@pytest.mark.parametrize("chip, axes", [
    ("h100", {"X": 3}), ("h100", {"X": 4, "Y": 2}), ("h100", {"X": 3, "Y": 8}),
    ("h100", {"X": 16, "Y": 2, "Z": 4}), ("gb200", {"X": 64}), ("gb200", {"R": 2, "G": 72}),
])
def test_parts_of_a_node_and_whole_nodes_build(chip, axes):
    assert not sr.mesh(chip, axes).custom


def test_gb200_nodes_are_72():
    with pytest.raises(ValueError, match="not whole 72-GPU nodes.*72 or 144"):
        sr.mesh("gb200", {"X": 96})


def test_custom_and_wrap_model_a_hypothetical_and_say_so():
    odd = sr.mesh("tpu-v5e", "3x5", custom=True)
    assert odd.custom and odd.n_chips == 15
    assert str(odd) == odd.title == "tpu-v5e 3x5 (custom)" and "custom" in repr(odd)
    ring = sr.mesh("tpu-v5e", "4x4", wrap=True)  # wraparound a 4x4 slice does not have
    assert ring.custom and ring.title == "tpu-v5e 4x4 (custom)"
    assert sr.mesh("h100", {"X": 9}, custom=True).n_chips == 9
    assert sr.mesh("tpu-v5e", "4x4").title == "tpu-v5e 4x4"
    with pytest.raises(ValueError, match="custom must be True or False"):
        sr.mesh("tpu-v5e", "4x4", custom="yes")


@pytest.mark.parametrize("mesh, message", [
    ("h100:9", "--mesh 'h100:9': a mesh of 9 h100 GPUs is not whole 8-GPU nodes"),
    ("tpu-v5e:3x5", "--mesh 'tpu-v5e:3x5': tpu-v5e offers no 3x5 slice; the nearest it "
                    "offers: 4x4, 2x4, 4x8"),
])
def test_the_cli_refuses_in_one_line(mesh, message, capsys):
    code = main(["serve", "--model", "llama-3.1-8b", "--mesh", mesh, "--batch", "4",
                 "--context", "1k"])
    out = capsys.readouterr()
    assert code == 2 and out.out == ""
    assert out.err.count("\n") == 1 and message in out.err
    assert "custom=True" not in out.err and "Traceback" not in out.err


def test_plan_titles_say_custom():
    odd = sr.mesh("tpu-v5e", {"X": 4}, custom=True)  # a 1-D line of 4: not a v5e slice
    plan = sr.serve("llama-3.1-8b", odd, batch=4, context=1024)
    assert str(plan).startswith("llama-3.1-8b on tpu-v5e 4 (custom) (4 chips)")
    real = sr.serve("llama-3.1-8b", sr.mesh("tpu-v5e", "2x2"), batch=4, context=1024)
    assert str(real).startswith("llama-3.1-8b on tpu-v5e 2x2 (4 chips)")
