"""The Core ML bundle builder on tiny heads: layout, exact bytes, read-back, quantization, refusals."""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anebench.artifacts import BuildSpec, BundleError, MLProgramBundle, build_or_reuse
from anebench.artifacts.coreml import near_equal_splits, rotation
from anebench.artifacts.mlprogram import unpack_bits
from anebench.artifacts.quant import encode, kmeans_available, kmeans_table, palettize_kmeans
from anebench.errors import UserError
from anebench.workloads import Workload

HIDDEN, VOCAB, SPLIT = 64, 1024, 128  # 8 splits of 128 rows
TINY = Workload("tiny_head", HIDDEN, VOCAB, "fp16", seed=7)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("coreml-cache")


@pytest.fixture(scope="module")
def built(cache):
    """One bundle per storage, built once for the module."""
    return {
        q: build_or_reuse(BuildSpec(TINY, q, max_split_rows=SPLIT), cache)
        for q in ("fp16", "int8", "lut4", "lut6")
    }


def source(start: int, stop: int) -> np.ndarray:
    return TINY.weights.read_rows(start, stop).astype(np.float32)


def test_layout_names_shapes_and_ops(built):
    bundle = built["fp16"].open()
    assert [(t.name, t.shape, t.dtype) for t in bundle.inputs] == [
        ("hidden_states", (1, 1, HIDDEN), "FLOAT16")
    ]
    assert [t.name for t in bundle.outputs] == [f"logits{i}" for i in range(1, 9)]
    assert all(t.shape == (1, 1, SPLIT) and t.dtype == "FLOAT16" for t in bundle.outputs)
    assert bundle.specification_version >= 9  # iOS18 / macOS 15
    types = bundle.op_types()
    assert types.count("conv") == 8 and "matmul" not in types and "linear" not in types
    for conv in bundle.convs():
        assert bundle.blobs[conv.inputs["weight"][0]].shape == (SPLIT, HIDDEN, 1, 1)
    assert "com.github.apple.coremltools.conversion_date" not in bundle.metadata
    assert built["fp16"].manifest["splits"] == [SPLIT] * 8


def test_fp16_exact_bytes_and_read_back(built):
    artifact = built["fp16"]
    bundle = artifact.open()
    assert bundle.weight_bytes == VOCAB * HIDDEN * 2 == artifact.weight_bytes
    assert artifact.manifest["weight_file_bytes"] == VOCAB * HIDDEN * 2 + 8 * 64 + 64
    assert artifact.manifest["weight_blobs"] == 8
    for index, conv in enumerate(bundle.convs()):
        stored = bundle.weight_of(conv).values
        assert stored.dtype == np.float16
        assert np.array_equal(stored, TINY.weights.read_rows(index * SPLIT, (index + 1) * SPLIT))
    # A slice reads only its rows and matches the whole.
    assert np.array_equal(
        bundle.decoded_rows(bundle.convs()[3], 5, 77), source(3 * SPLIT + 5, 3 * SPLIT + 77)
    )


@pytest.mark.parametrize("quant,nbits", [("lut6", 6), ("lut4", 4)])
def test_lut_bytes_decode_error_and_exact_tables(built, quant, nbits):
    artifact = built[quant]
    bundle = artifact.open()
    groups = VOCAB // 8
    assert bundle.weight_bytes == VOCAB * HIDDEN * nbits // 8 + groups * (1 << nbits) * 2
    assert bundle.op_types().count("constexpr_lut_to_dense") == 8
    assert artifact.manifest["lut_mode"] == "uniform" and artifact.manifest["group_size"] == 8
    for index, conv in enumerate(bundle.convs()):
        rows = TINY.weights.read_rows(index * SPLIT, (index + 1) * SPLIT)
        expected = encode(lambda lo, hi, rows=rows: rows[lo:hi], SPLIT, HIDDEN, quant)
        stored = bundle.weight_of(conv)
        assert np.array_equal(stored.values, expected.values)  # packed indices read back bit for bit
        assert np.array_equal(stored.table, expected.table)
        decoded = stored.decode()
        grouped = rows.astype(np.float32).reshape(SPLIT // 8, -1)
        step = (grouped.max(axis=1) - grouped.min(axis=1)) / ((1 << nbits) - 1)
        error = np.abs(decoded - rows.astype(np.float32)).reshape(SPLIT // 8, -1).max(axis=1)
        assert np.all(error <= step / 2 * 1.01 + 1e-3 * np.abs(grouped).max(axis=1))
        assert error.max() > 0  # it really is quantized
    # Group-aligned and unaligned slices decode to the same values as the whole split.
    conv = bundle.convs()[2]
    assert np.array_equal(bundle.decoded_rows(conv, 3, 61), bundle.weight_of(conv).decode()[3:61])


def test_int8_per_channel(built):
    bundle = built["int8"].open()
    assert bundle.weight_bytes == VOCAB * HIDDEN + VOCAB * 2
    assert bundle.op_types().count("constexpr_blockwise_shift_scale") == 8
    for index, conv in enumerate(bundle.convs()):
        rows = source(index * SPLIT, (index + 1) * SPLIT)
        stored = bundle.weight_of(conv)
        assert stored.values.dtype == np.int8 and stored.table.shape == (SPLIT,)
        scale = stored.table.astype(np.float32)[:, None]
        assert np.all(np.abs(stored.decode() - rows) <= scale / 2 * 1.01)
        assert np.abs(stored.values).max() == 127


def test_weight_bytes_come_from_the_program_not_the_files(built, tmp_path):
    copy = tmp_path / "copy.mlpackage"
    shutil.copytree(built["fp16"].package, copy)
    weight_bin = next(copy.rglob("weight.bin"))
    with open(weight_bin, "ab") as handle:
        handle.write(b"\0" * 4096)  # bytes no operation reads
    (copy / "Data" / "stray.bin").write_bytes(b"\0" * 1000)
    assert MLProgramBundle(copy).weight_bytes == VOCAB * HIDDEN * 2


def test_corrupt_blob_header_is_refused(built, tmp_path):
    copy = tmp_path / "bad.mlpackage"
    shutil.copytree(built["fp16"].package, copy)
    weight_bin = next(copy.rglob("weight.bin"))
    data = bytearray(weight_bin.read_bytes())
    data[64:68] = b"\0\0\0\0"  # the first blob's sentinel
    weight_bin.write_bytes(bytes(data))
    with pytest.raises(BundleError, match="no blob header"):
        _ = MLProgramBundle(copy).weight_bytes


def test_builds_are_reproducible(built, tmp_path):
    again = build_or_reuse(BuildSpec(TINY, "lut6", max_split_rows=SPLIT), tmp_path)
    first = built["lut6"]
    assert not again.reused and again.weight_sha256 == first.weight_sha256
    for name in ("Manifest.json", "Data/com.apple.CoreML/model.mlmodel"):
        assert (again.package / name).read_bytes() == (first.package / name).read_bytes()


def test_repeat_reads_distinct_weight_sets(tmp_path):
    artifact = build_or_reuse(BuildSpec(TINY, "fp16", repeat=2, max_split_rows=256), tmp_path)
    bundle = artifact.open()
    assert bundle.weight_bytes == 2 * VOCAB * HIDDEN * 2
    assert bundle.op_types().count("conv") == 8 and bundle.op_types().count("add") == 4
    convs = bundle.convs_for_output("logits2")
    assert len(convs) == 2
    first, second = (bundle.weight_of(c).values for c in convs)
    assert not np.array_equal(first, second)
    shift = rotation(1, VOCAB)
    assert np.array_equal(second, TINY.weights.read_rows(256 + shift, 512 + shift))


def test_published_layout_splits():
    assert near_equal_splits(128256, 16384) == [(i * 16032, (i + 1) * 16032) for i in range(8)]
    spec = BuildSpec(Workload("big", 4096, 128256), "lut6")
    assert [b - a for a, b in spec.splits] == [16032] * 8


@settings(max_examples=200, deadline=None)
@given(rows=st.integers(1, 400_000), max_rows=st.integers(1, 20_000), unit=st.sampled_from([1, 8]))
def test_splits_are_near_equal_bounded_and_cover(rows, max_rows, unit):
    bounds = near_equal_splits(rows, max_rows, unit)
    sizes = [b - a for a, b in bounds]
    assert bounds[0][0] == 0 and bounds[-1][1] == rows and sum(sizes) == rows
    assert all(a == prev for (a, _), (_, prev) in zip(bounds[1:], bounds[:-1], strict=True))
    assert max(sizes) <= max_rows
    step = unit if rows % unit == 0 and max_rows >= unit else 1
    assert max(sizes) - min(sizes) <= step and all(s % step == 0 for s in sizes)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"workload": Workload("odd", 64, 1001), "quant": "lut6"}, "not divisible by the LUT group size 8"),
        ({"workload": Workload("small", 64, 32), "quant": "lut4"}, "too small to be palettised"),
        ({"workload": Workload("narrow", 4, 4096), "quant": "lut6"}, "fewer values than the 64 entries"),
        ({"workload": TINY, "quant": "lut5"}, "quant 'lut5' is not supported; valid: fp16, int8, lut4, lut6"),
        ({"workload": TINY, "quant": "lut6", "lut_mode": "median"}, "lut mode 'median' is not supported"),
        ({"workload": TINY, "repeat": 0}, "repeat 0 must be between 1 and 64"),
        # 514 = 2 x 257 rows: weight set 3 would be rotated by 2 x 257, back onto set 1.
        (
            {"workload": Workload("rot", 64, 514), "repeat": 3},
            "repeat 3 with a vocabulary of 514 rows would repeat",
        ),
    ],
)
def test_refusals(kwargs, message):
    with pytest.raises(UserError, match=message):
        BuildSpec(**kwargs)


def test_repeat_short_of_a_rotation_collision_is_accepted():
    assert BuildSpec(Workload("rot", 64, 514), repeat=2).repeat == 2
    assert BuildSpec(Workload("prime", 64, 1021), repeat=64).repeat == 64


def test_odd_vocabulary_splits_fine_for_fp16_and_lut_uses_group_multiples():
    assert {b - a for a, b in BuildSpec(Workload("odd", 64, 1001), max_split_rows=128).splits} == {125, 126}
    spec = BuildSpec(Workload("even", 64, 1000), "lut6", max_split_rows=125)
    assert all((b - a) % 8 == 0 and b - a <= 125 for a, b in spec.splits)


@dataclass(frozen=True)
class ArraySource:
    """A checkpoint-like WeightSource: fixed rows, not the synthetic generator."""

    values: np.ndarray

    def description(self) -> dict:
        return {"source": "test-array", "sha": hash(self.values.tobytes())}

    def read_rows(self, start: int, stop: int) -> np.ndarray:
        return self.values[start:stop]


def test_bf16_source_is_converted_to_fp16_and_says_so(tmp_path):
    values = np.random.default_rng(0).standard_normal((256, 64), dtype=np.float32) * 0.05
    from anebench.workloads import round_to_bf16

    bf16 = round_to_bf16(values)
    workload = Workload("bf16_head", 64, 256, "bf16", source=ArraySource(bf16))
    artifact = build_or_reuse(BuildSpec(workload, "fp16"), tmp_path)
    assert any("bf16 weights converted to fp16" in note for note in artifact.manifest["notes"])
    stored = artifact.open().weight_of(artifact.open().convs()[0]).values
    assert np.array_equal(stored, bf16.astype(np.float16))


def test_values_beyond_fp16_are_refused(tmp_path):
    values = np.full((64, 64), 1e6, dtype=np.float32)
    workload = Workload("huge", 64, 64, "fp32", source=ArraySource(values))
    with pytest.raises(UserError, match="exceed fp16's range"):
        build_or_reuse(BuildSpec(workload, "fp16"), tmp_path)
    assert not [p for p in tmp_path.iterdir()]  # nothing half-written left in the cache


@pytest.mark.skipif(not kmeans_available(), reason="k-means palettisation needs kmeans1d (anebench[coreml])")
def test_kmeans_mode_beats_uniform_on_real_like_weights(tmp_path):
    rng = np.random.default_rng(1)
    values = (rng.standard_normal((16, 2048), dtype=np.float32) * 0.02).astype(np.float16)  # bell-shaped
    workload = Workload("ckpt_head", 2048, 16, "fp16", source=ArraySource(values))
    spec = BuildSpec(workload, "lut4")
    assert spec.resolved_lut_mode == "kmeans"  # real weights: table values matter
    bundle = build_or_reuse(spec, tmp_path).open()
    kmeans = bundle.weight_of(bundle.convs()[0]).decode()
    uniform = encode(lambda lo, hi: values[lo:hi], 16, 2048, "lut4", "uniform").decode()
    exact = values.astype(np.float32)
    assert np.mean((kmeans - exact) ** 2) < np.mean((uniform - exact) ** 2)


@pytest.mark.skipif(not kmeans_available(), reason="k-means palettisation needs kmeans1d (anebench[coreml])")
def test_kmeans_tables_equal_coremltools_palettizer_where_it_uses_kmeans1d():
    """Groups of 10,000+ fp16 values: coremltools clusters them with kmeans1d, and so do we, for every
    size."""
    from anebench.artifacts._coremltools import coremltools

    coremltools()
    from coremltools.optimize.coreml._quantization_passes import palettize_weights

    values = (np.random.default_rng(4).standard_normal((16, 1280)) * 0.02).astype(
        np.float16
    )  # 8 x 1280 >= 10k
    ours = palettize_kmeans(lambda lo, hi: values[lo:hi], 16, 1280, 4, 8, workers=1)
    theirs = palettize_weights.blockwise_compress(values.reshape(16, 1280, 1, 1), "KMEANS", 4, [8, 0, 0, 0])
    assert np.array_equal(ours.table, np.asarray(theirs.lut, dtype=np.float16).reshape(2, 16))
    assert np.array_equal(ours.values, np.asarray(theirs.indices, dtype=np.uint8).reshape(16, 1280))


@pytest.mark.skipif(not kmeans_available(), reason="k-means palettisation needs kmeans1d (anebench[coreml])")
def test_kmeans_needs_no_scikit_learn_for_small_groups(monkeypatch):
    """Below 10,000 values per group coremltools falls back to scikit-learn; we never do."""
    monkeypatch.setitem(sys.modules, "sklearn", None)  # importing it now fails, installed or not
    values = (np.random.default_rng(5).standard_normal((32, 48)) * 0.05).astype(np.float16)  # 384 per group
    one = palettize_kmeans(lambda lo, hi: values[lo:hi], 32, 48, 6, 8, workers=1)
    threaded = palettize_kmeans(lambda lo, hi: values[lo:hi], 32, 48, 6, 8, workers=3)
    assert np.array_equal(one.values, threaded.values) and np.array_equal(one.table, threaded.table)
    decoded, exact = one.decode(), values.astype(np.float32)
    uniform = encode(lambda lo, hi: values[lo:hi], 32, 48, "lut6", "uniform").decode()
    assert np.abs(decoded - exact).max() < 0.01
    assert np.mean((decoded - exact) ** 2) < np.mean((uniform - exact) ** 2)


@pytest.mark.skipif(not kmeans_available(), reason="k-means palettisation needs kmeans1d (anebench[coreml])")
def test_kmeans_group_with_fewer_values_than_entries_is_exact():
    group = np.repeat(np.array([-0.5, 0.0, 0.25, 1.0], dtype=np.float16), 100).reshape(8, 50)
    table, indices = kmeans_table(group, 6)
    assert table.dtype == np.float16 and list(table[:4]) == [-0.5, 0.0, 0.25, 1.0] and not table[4:].any()
    assert indices.shape == (8, 50) and np.array_equal(table[indices], group)  # every value decodes exactly


def test_unpack_bits_is_lsb_first():
    values = np.arange(64, dtype=np.uint8)
    bits = np.zeros(64 * 6, dtype=np.uint8)
    for i, v in enumerate(values):
        bits[i * 6:(i + 1) * 6] = [(v >> b) & 1 for b in range(6)]
    packed = np.packbits(bits, bitorder="little").tobytes()
    assert np.array_equal(unpack_bits(packed, 6, 64), values)
    assert np.array_equal(unpack_bits(packed[3:], 6, 10, 0), values[4:14])  # byte 3 starts value 4


def test_checkpoint_workload_builds_through_the_same_weight_source(tmp_path):
    """An hf: checkpoint (uneven vocabulary 515) becomes a bundle whose weights read back exactly."""
    from anebench.workloads import resolve_workload
    from checkpoint_builders import single_file_model, weights

    model = single_file_model(tmp_path / "model")
    workload = resolve_workload(f"hf:{model}")
    spec = BuildSpec(workload, "fp16", max_split_rows=128)
    assert [b - a for a, b in spec.splits] == [103] * 5 and spec.resolved_lut_mode == "kmeans"
    bundle = build_or_reuse(spec, tmp_path / "cache").open()
    stored = np.concatenate([bundle.weight_of(conv).values for conv in bundle.convs()])
    assert np.array_equal(stored, weights(seed=2))  # the checkpoint's lm_head.weight, bit for bit
    with pytest.raises(UserError, match="515 rows are not divisible by the LUT group size 8"):
        BuildSpec(workload, "lut6")
