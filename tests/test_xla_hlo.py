"""The HLO parser of the XLA oracle, on literal HLO text; no JAX needed.

Lines marked "JAX 0.10.2" were captured from `compiled.as_text()` of the oracle's compiles on
CPU (metadata dropped); the rest are hand-written in the format XLA prints (its GPU async
collectives, sub-axes), because the CPU backend does not emit them.
"""

import ast
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from symroof.xla import parse_collectives

XY = {"X": 4, "Y": 2}
BY_X = ((0, 2, 4, 6), (1, 3, 5, 7))  # on {X: 4, Y: 2} (device = 2x + y), X varies
BY_Y = ((0, 1), (2, 3), (4, 5), (6, 7))


def one(text: str, mesh: dict):
    [c] = parse_collectives(text, mesh)
    return c


def test_iota_without_transpose():
    # JAX 0.10.2: A[M_X, K_Y] @ B[K_Y, N_X] -> C[M_X, N] on {X: 4, Y: 2}, f32
    c = one(
        "%ynn_fusion = f32[16,256]{1,0} fusion(%param, %wrapped_copy.1), kind=kCustom\n"
        "ROOT %all-reduce = f32[16,256]{1,0} all-reduce(%ynn_fusion), channel_id=2, "
        "replica_groups=[4,2]<=[8], use_global_device_ids=true, to_apply=%add.clone",
        XY,
    )
    assert (c.kind, c.axes, c.groups, c.spelling) == ("all-reduce", ("Y",), BY_Y, "[4,2]<=[8]")
    assert (c.operand_shapes, c.result_shapes, c.elements_in, c.elements_out, c.dtype) == (
        ((16, 256),), ((16, 256),), 16 * 256, 16 * 256, "f32",
    )  # fmt: skip


def test_iota_with_transpose():
    # JAX 0.10.2: same case; B's N_X gathered over X
    c = one(
        "%wrapped_copy = f32[64,64]{0,1} fusion(%param.1), kind=kLoop\n"
        "%all-gather = f32[64,256]{0,1} all-gather(%wrapped_copy), channel_id=1, "
        "replica_groups=[2,4]<=[4,2]T(1,0), dimensions={1}, use_global_device_ids=true",
        XY,
    )
    assert (c.kind, c.axes, c.groups) == ("all-gather", ("X",), BY_X)
    assert (c.elements_in, c.elements_out) == (64 * 64, 64 * 256)


def test_explicit_groups():
    # JAX 0.10.2: A[M_Y, K_X] @ B[K_X, N] -> C[M, N] on {X: 4, Y: 2}, f32
    c = one(
        "%ynn_fusion = f32[32,256]{1,0} fusion(%param, %param.1), kind=kCustom\n"
        "%all-reduce = f32[32,256]{1,0} all-reduce(%ynn_fusion), channel_id=1, "
        "replica_groups={{0,2,4,6},{1,3,5,7}}, use_global_device_ids=true, to_apply=%add.clone",
        XY,
    )
    assert (c.axes, c.groups, c.spelling) == (("X",), BY_X, "{{0,2,4,6},{1,3,5,7}}")


@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=3).flatmap(
        lambda dims: st.tuples(st.just(dims), st.permutations(range(len(dims))))
    )
)
def test_iota_matches_numpy(dims_perm):
    """`[G,S]<=[dims]T(perm)` is arange(n).reshape(dims).transpose(perm), in rows of S."""
    dims, perm = dims_perm
    n, size = int(np.prod(dims)), dims[perm[-1]]
    text = f"[{n // size},{size}]<=[{','.join(map(str, dims))}]T({','.join(map(str, perm))})"
    c = one(f"%ar = f32[2]{{0}} all-reduce(f32[2]{{0}} %p), replica_groups={text}", {"X": n})
    rows = np.arange(n).reshape(dims).transpose(perm).reshape(n // size, size)
    assert c.groups == tuple(map(tuple, rows.tolist()))


T42 = ", device_ids=([4,2]T(1,0))"
MESH_FORMS = [  # JAX 0.10.2 spellings of replica_groups, and what they are on our mesh
    ("mesh['axis_0'=1,'axis_1'=4] {'axis_1'}", {"X": 4}, ("X",), ((0, 1, 2, 3),)),
    ("mesh['axis_0'=4,'axis_1'=1] {'axis_0'}", {"X": 4}, ("X",), ((0, 1, 2, 3),)),
    ("mesh['axis_0'=1,'axis_1'=4,'axis_2'=2] {'axis_1'}", XY, ("X",), BY_X),
    (f"mesh['axis_0'=1,'axis_1'=2,'axis_2'=4]{T42} {{'axis_1'}}", XY, ("Y",), BY_Y),
    (f"mesh['axis_0'=2,'axis_1'=1,'axis_2'=4]{T42} {{'axis_0'}}", XY, ("Y",), BY_Y),
    ("mesh['axis_0'=1,'axis_1'=8] {'axis_1'}", XY, ("X", "Y"), (tuple(range(8)),)),
    (  # {X: 2, Y: 2, Z: 2}: device = 4x + 2y + z
        "mesh['axis_0'=1,'axis_1'=2,'axis_2'=4], device_ids=([2,2,2]T(1,0,2)) {'axis_1'}",
        {"X": 2, "Y": 2, "Z": 2}, ("Y",), ((0, 2), (1, 3), (4, 6), (5, 7)),
    ),
    # hand-written, XLA's sub-axis spelling 'a':(pre_size)size: 8 = [pre, size, rest]
    ("mesh['a'=8] {'a':(1)4}", XY, ("X",), BY_X),
    ("mesh['a'=8] {'a':(4)2}", XY, ("Y",), BY_Y),
    # device = 4a + b; b = [pre 1 or 2, size 2, rest]: the minor or the major half of b
    ("mesh['a'=2,'b'=4] {'b':(2)2}", {"X": 8}, None, ((0, 1), (2, 3), (4, 5), (6, 7))),
    ("mesh['a'=2,'b'=4] {'b':(1)2}", {"X": 8}, None, ((0, 2), (1, 3), (4, 6), (5, 7))),
    ("mesh['a'=2,'b'=4] {'a','b':(1)2}", {"X": 2, "Y": 2, "Z": 2}, ("X", "Y"), ((0, 2, 4, 6),
     (1, 3, 5, 7))),
]  # fmt: skip


@pytest.mark.parametrize(("spelling", "mesh", "axes", "groups"), MESH_FORMS)
def test_mesh_form(spelling, mesh, axes, groups):
    c = one(
        "%ynn_fusion = f32[64,256]{1,0} fusion(%a, %b), kind=kCustom\n"
        "%all-reduce.1 = f32[64,256]{1,0} all-reduce(%ynn_fusion), channel_id=1, "
        f"replica_groups={spelling}, use_global_device_ids=true, to_apply=%add.clone_promoted",
        mesh,
    )
    assert (c.axes, c.groups, c.spelling) == (axes, groups, spelling)
    assert (c.note != "") == (axes is None)


def test_all_to_all_pieces():
    # JAX 0.10.2: A[M, K_X] @ B[K, N] -> C[M_X, N] on {X: 4, Y: 2}, f32
    piece = "f32[1,16,32]{2,1,0}"
    defs = "".join(f"%s{k} = {piece} fusion(%param), kind=kLoop\n" for k in range(4))
    c = one(
        defs + f"%all-to-all.1 = ({piece}, {piece}, {piece}, {piece}) all-to-all(%s0, %s1, %s2, "
        "%s3), channel_id=1, replica_groups=mesh['axis_0'=4,'axis_1'=1,'axis_2'=2] {'axis_0'}",
        XY,
    )
    assert (c.kind, c.axes, c.groups) == ("all-to-all", ("X",), BY_X)
    assert c.operand_shapes == c.result_shapes == ((1, 16, 32),) * 4
    assert c.elements_in == c.elements_out == 4 * 16 * 32


def test_collective_permute():
    # JAX 0.10.2: A[M_Y, K] @ B[K, N] -> C[M_X, N] on {X: 4, Y: 2}, f32
    c = one(
        "%f = f32[16,128]{1,0} fusion(%param, %constant.5, %partition-id), kind=kLoop\n"
        "%collective-permute = f32[16,128]{1,0} collective-permute(%f), channel_id=1, "
        "source_target_pairs={{0,0},{2,1},{4,2},{6,3},{1,4},{3,5},{5,6},{7,7}}",
        XY,
    )
    assert (c.kind, c.axes, c.elements_in) == ("collective-permute", ("X", "Y"), 16 * 128)
    assert c.groups[:2] == ((0, 0), (2, 1)) and "source, target" in c.note


ASYNC = """\
%wrapped_reduce_scatter (rs_param: f32[64,128]) -> f32[16,128] {
  %rs_param = f32[64,128]{1,0} parameter(0)
  ROOT %reduce-scatter.1 = f32[16,128]{1,0} reduce-scatter(%rs_param), channel_id=4, \
replica_groups=[1,4]<=[4], dimensions={0}, to_apply=%add
}

ENTRY %main (p0: bf16[16,128], p1: f32[64,128]) -> f32[16,128] {
  %p0 = bf16[16,128]{1,0} parameter(0)
  %p1 = f32[64,128]{1,0} parameter(1)
  %ag-start = (bf16[16,128]{1,0}, bf16[64,128]{1,0}) all-gather-start(bf16[16,128]{1,0} %p0), \
channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true
  %ag-done = bf16[64,128]{1,0} all-gather-done(%ag-start)
  %ar-start = f32[64,128]{1,0} all-reduce-start(%p1), channel_id=2, replica_groups={}, to_apply=%add
  %ar-done = f32[64,128]{1,0} all-reduce-done(%ar-start)
  %cp-start = (f32[64,128]{1,0}, f32[64,128]{1,0}, u32[], u32[]) collective-permute-start(%p1), \
channel_id=3, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  %cp-done = f32[64,128]{1,0} collective-permute-done(%cp-start)
  %rs-start = ((f32[64,128]{1,0}), f32[16,128]{1,0}) async-start(%p1), calls=%wrapped_reduce_scatter
  ROOT %rs-done = f32[16,128]{1,0} async-done(%rs-start)
}
"""


def test_async_pairs_count_once():
    got = [
        (c.kind, c.axes, c.elements_in, c.elements_out, c.dtype)
        for c in parse_collectives(ASYNC, {"X": 4})
    ]
    assert got == [
        ("reduce-scatter", ("X",), 64 * 128, 16 * 128, "f32"),  # counted inside its async wrapper
        ("all-gather", ("X",), 16 * 128, 64 * 128, "bf16"),  # the result half of the start tuple
        ("all-reduce", ("X",), 64 * 128, 64 * 128, "f32"),  # {}: one group of every device
        ("collective-permute", ("X",), 64 * 128, 64 * 128, "f32"),
    ]  # fmt: skip


def test_tuple_shapes_with_index_comments():
    piece = "f32[1,8]{1,0}"
    pieces = ", ".join([piece] * 5) + ", /*index=5*/" + ", ".join([piece] * 3)
    text = f"%a2a = ({pieces}) all-to-all(f32[8,8]{{1,0}} %p), replica_groups=[1,8]<=[8]"
    c = one(text, XY)
    assert (c.axes, c.result_shapes, c.elements_out) == (("X", "Y"), ((1, 8),) * 8, 64)


def test_operands_with_index_comments():
    """A tuple all-reduce of six operands prints ``/*index=5*/`` before the sixth operand's
    name too (seen in a layer's gradient all-reduce, JAX 0.10.2)."""
    defs = "".join(f"%g{i} = f32[4,{i + 1}]{{1,0}} fusion(%p)\n" for i in range(6))
    shapes = ", ".join(f"f32[4,{i + 1}]{{1,0}}" for i in range(5)) + ", /*index=5*/f32[4,6]{1,0}"
    names = ", ".join(f"%g{i}" for i in range(5)) + ", /*index=5*/%g5"
    text = defs + f"%ar = ({shapes}) all-reduce({names}), replica_groups=[1,8]<=[8]"
    c = one(text, XY)
    assert c.operand_shapes == tuple((4, i + 1) for i in range(6))
    assert c.elements_in == c.elements_out == 4 * (1 + 2 + 3 + 4 + 5 + 6)


@pytest.mark.parametrize(
    ("groups", "mesh"),
    [("{{0,3},{1,2}}", {"X": 2, "Y": 2}), ("{{0,1},{2,3}}", {"X": 4}), ("{{0,1,2}}", {"X": 4})],
)
def test_groups_that_are_not_whole_axes_are_reported(groups, mesh):
    c = one(
        f"%p = f32[4]{{0}} parameter(0)\n%ar = f32[4]{{0}} all-reduce(%p), replica_groups={groups}",
        mesh,
    )
    assert c.axes is None and c.note


def test_device_coords_override_the_row_major_map():
    text = (
        "%p = f32[4]{0} parameter(0)\n%ar = f32[4]{0} all-reduce(%p), replica_groups={{0,1},{2,3}}"
    )
    assert one(text, {"X": 2, "Y": 2}).axes == ("Y",)
    column_major = {d: (d % 2, d // 2) for d in range(4)}
    [c] = parse_collectives(text, {"X": 2, "Y": 2}, device_coords=column_major)
    assert c.axes == ("X",)


def test_unknown_input_fails_loudly():
    with pytest.raises(ValueError, match="replica-group spelling"):
        parse_collectives(
            "%p = f32[4]{0} parameter(0)\n%ar = f32[4]{0} all-reduce(%p), replica_groups=??", XY
        )
    with pytest.raises(ValueError, match="not defined"):
        parse_collectives("%ar = f32[4]{0} all-reduce(%nowhere), replica_groups={}", XY)


def test_references_to_collectives_are_not_collectives():
    # JAX 0.10.2: the convert that consumes an all-reduce names it as an operand
    text = (
        "%ynn_fusion = f32[64,256]{1,0} fusion(%a, %b), kind=kCustom\n"
        "%all-reduce.1 = f32[64,256]{1,0} all-reduce(%ynn_fusion), replica_groups=[1,4]<=[4]\n"
        "ROOT %wrapped_convert.2 = bf16[64,256]{1,0} fusion(%all-reduce.1), kind=kLoop"
    )
    assert [c.name for c in parse_collectives(text, {"X": 4})] == ["all-reduce.1"]


def test_the_oracle_never_imports_symroof_outside_xla():
    """Independence: the oracle must not see symroof's formulas; JAX only in the worker.
    ``check.py``, ``check_layers.py`` and ``check_moe.py`` are the bridges that read
    symroof's plans, and nothing in the oracle imports them."""
    bridges = ("check", "check_layers", "check_moe")
    for path in (Path(__file__).parents[1] / "symroof" / "xla").glob("*.py"):
        if path.stem in bridges:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                assert node.level <= 1, f"{path.name} imports from outside symroof.xla"
                assert module.split(".")[-1] not in bridges, f"{path.name} imports a bridge"
                assert (
                    node.level == 1
                    or not module.startswith("symroof")
                    or module.startswith("symroof.xla")
                )
            if isinstance(node, (ast.Import, ast.ImportFrom)) and path.name != "_worker.py":
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                assert not any(n.split(".")[0] == "jax" for n in names), f"{path.name} imports jax"
