import numpy as np
import pytest

from anebench.errors import UserError
from anebench.workloads import CATALOG, Workload, resolve_workload, round_to_bf16


def test_published_heads_have_the_published_shape_and_bytes():
    for name in ("llama_lm_head", "DeepHermes_lm_head"):
        workload = resolve_workload(name)
        assert workload.shape == (128256, 4096)
        assert workload.dtype == "fp16"
        assert workload.weight_bytes == 1_050_673_152


def test_lut6_head_is_the_llama_head_palettised_with_the_published_size():
    lut6, fp16 = resolve_workload("llama_lm_head_lut6"), resolve_workload("llama_lm_head")
    assert (lut6.shape, lut6.seed, lut6.quant) == (fp16.shape, fp16.seed, "lut6")
    assert lut6.fingerprint != fp16.fingerprint
    # 6-bit indices + 16032 tables of 64 fp16 entries: weight.bin (396,055,616) minus 17 blob headers
    assert lut6.stored_bytes == 128256 * 4096 * 6 // 8 + 16032 * 64 * 2 == 396_054_528
    assert fp16.stored_bytes == fp16.weight_bytes


def test_fingerprint_is_stable_and_changes_with_anything_that_changes_the_bytes():
    base = Workload("a", 64, 1024, "fp16", seed=1)
    assert base.fingerprint == Workload("renamed", 64, 1024, "fp16", seed=1).fingerprint
    assert len(base.fingerprint) == 64
    variants = [
        Workload("a", 64, 1024, "fp16", seed=2),
        Workload("a", 64, 1024, "fp32", seed=1),
        Workload("a", 128, 1024, "fp16", seed=1),
        Workload("a", 64, 1024, "fp16", seed=1, batch=4),
        Workload("a", 64, 1024, "fp16", seed=1, quant="lut6"),
    ]
    assert len({base.fingerprint, *(v.fingerprint for v in variants)}) == 6
    assert CATALOG["llama_lm_head"].fingerprint != CATALOG["DeepHermes_lm_head"].fingerprint


def test_rows_are_the_same_however_they_are_sliced(small_workload):
    whole = small_workload.weights.read_rows(0, 1024)
    pieces = np.concatenate(
        [small_workload.weights.read_rows(a, b) for a, b in [(0, 100), (100, 700), (700, 1024)]]
    )
    np.testing.assert_array_equal(whole, pieces)
    assert whole.dtype == np.float16
    assert whole.shape == (1024, 64)
    magnitude = np.abs(whole.astype(np.float32))
    assert magnitude.min() >= 2**-3 and magnitude.max() < 2**-2  # 2^e <= 1/sqrt(64) < 2^(e+1)
    assert 0.45 < np.mean(whole > 0) < 0.55  # random signs
    assert len(np.unique(whole)) == 2 * 1024  # every sign and 10-bit mantissa appears


def test_fill_rows_converts_exactly_into_the_engine_buffer(small_workload):
    buffer = np.empty(small_workload.shape, dtype=np.float32)
    small_workload.fill_rows(buffer)
    np.testing.assert_array_equal(buffer, small_workload.weights.read_rows(0, 1024).astype(np.float32))


def test_row_blocks_tile_the_range_and_fill_rows_honours_its_offset():
    from anebench.workloads import FILL_BLOCK_ROWS

    workload = Workload("tall", 8, 2 * FILL_BLOCK_ROWS + 500, "fp16", seed=5)
    start, stop = 300, 2 * FILL_BLOCK_ROWS + 450  # spans three blocks, neither end on a block boundary
    blocks = list(workload.row_blocks(start, stop))
    assert [(lo, hi) for lo, hi, _ in blocks] == [
        (300, 300 + FILL_BLOCK_ROWS),
        (300 + FILL_BLOCK_ROWS, 300 + 2 * FILL_BLOCK_ROWS),
        (300 + 2 * FILL_BLOCK_ROWS, stop),
    ]
    expected = workload.weights.read_rows(start, stop)
    np.testing.assert_array_equal(np.concatenate([rows for _, _, rows in blocks]), expected)
    buffer = np.empty((stop - start, 8), dtype=np.float32)
    workload.fill_rows(buffer, row_start=start)
    np.testing.assert_array_equal(buffer, expected.astype(np.float32))
    assert [hi for _, hi, _ in workload.row_blocks()][-1] == workload.vocab


def test_different_seeds_give_different_weights():
    a = Workload("a", 64, 300, seed=1).weights.read_rows(0, 300)
    b = Workload("a", 64, 300, seed=2).weights.read_rows(0, 300)
    assert not np.array_equal(a, b)


def test_inputs_are_deterministic_and_exact_in_fp16(small_workload):
    x = small_workload.with_batch(3).inputs()
    assert x.shape == (3, 64)
    np.testing.assert_array_equal(x, x.astype(np.float16).astype(np.float32))
    np.testing.assert_array_equal(x, small_workload.with_batch(3).inputs())


def test_bf16_rounding_keeps_the_top_16_bits_rounded_to_nearest():
    values = np.array([1.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, -3.14159, 65504.0], dtype=np.float32)
    rounded = round_to_bf16(values)
    assert np.all(rounded.view(np.uint32) & 0xFFFF == 0)
    # halfway cases round to the even mantissa: down to 1.0, up to 1 + 2/128
    assert rounded[0] == 1.0 and rounded[1] == 1.0 and rounded[2] == 1.015625
    assert abs(rounded[3] - values[3]) <= abs(values[3]) * 2**-8
    bf16 = Workload("b", 32, 64, "bf16").weights.read_rows(0, 64)
    assert bf16.dtype == np.float32 and np.all(bf16.view(np.uint32) & 0xFFFF == 0)
    np.testing.assert_array_equal(round_to_bf16(bf16), bf16)


def test_fp32_weights_use_the_full_mantissa():
    fp32 = Workload("f", 64, 512, "fp32").weights.read_rows(0, 512)
    assert fp32.dtype == np.float32
    assert np.any(fp32.view(np.uint32) & 0x1FFF)  # bits below fp16 precision are set


def test_parametric_workloads():
    w = resolve_workload("lm_head:4096x32768:fp32")
    assert (w.hidden, w.vocab, w.dtype, w.weight_bytes) == (4096, 32768, "fp32", 4096 * 32768 * 4)
    assert resolve_workload("lm_head:64x128").dtype == "fp16"
    assert resolve_workload("lm_head:64x128:bf16").weight_bytes == 64 * 128 * 2


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("lm_head:4096by32768", "malformed"),
        ("lm_head:0x10", "positive"),
        ("lm_head:64x64:int3", "unknown dtype 'int3'; valid: fp32, fp16, bf16"),  # a shape, a dtype we lack
        ("gpt5_head", "unknown workload 'gpt5_head'"),
    ],
)
def test_bad_workload_specs_are_refused_with_one_clear_line(spec, expected):
    with pytest.raises(UserError) as info:
        resolve_workload(spec)
    message = str(info.value)
    assert expected in message and "\n" not in message
    if expected.startswith("unknown workload"):
        assert "llama_lm_head" in message  # names what is valid


def test_unknown_quantization_is_refused_where_the_workload_is_made():
    with pytest.raises(UserError, match="quant 'lutx' is not supported; valid: fp16, int8, lut4, lut6"):
        Workload("q", 64, 64, quant="lutx")
