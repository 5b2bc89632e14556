"""Identity = what was read: a record's fingerprint names the bytes streamed and how they were stored."""

from __future__ import annotations

import pytest

from anebench.engines.numpy_engine import NumpyEngine
from anebench.errors import UserError
from anebench.orchestration.session import RunOptions, measure_workload
from anebench.report.compare import family_comparison
from anebench.results.published import published_records
from anebench.workloads import resolve_workload
from clitools import run_cli
from test_store import make_record


def test_run_numpy_on_the_lut6_head_is_refused_in_one_line_and_writes_nothing(capsys, tmp_path):
    out = tmp_path / "r.json"
    code, _, stderr = run_cli(capsys, "run", "-e", "numpy", "-w", "llama_lm_head_lut6", "--runs", "5",
                                   "--out", str(out))
    assert code == 2 and not out.exists()
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and "cannot stream 'llama_lm_head_lut6' as stored (lut6" in lines[0]
    assert "llama_lm_head" in lines[0]


@pytest.mark.parametrize("engine_name", ["torch", "mlx"])
def test_other_cpu_engines_refuse_a_quantized_head_too(engine_name):
    from anebench.engines import available_engine
    from anebench.engines.base import check_streams_as_stored

    engine = available_engine(engine_name)
    if engine is None:
        pytest.skip(reason=f"{engine_name} is not installed here")
    with pytest.raises(UserError, match="cannot stream 'llama_lm_head_lut6' as stored"):
        check_streams_as_stored(engine, resolve_workload("llama_lm_head_lut6"), "cpu")


def test_core_ml_streams_lut6_as_stored_under_the_published_fingerprint():
    from anebench.engines.base import check_streams_as_stored
    from anebench.engines.coreml_engine import CoreMLEngine

    lut6 = resolve_workload("llama_lm_head_lut6")
    check_streams_as_stored(CoreMLEngine(), lut6, "ane")  # no refusal
    published = [r for r in published_records() if r.workload.name == "llama_lm_head_lut6"]
    assert lut6.streamed_fingerprint("lut6") == published[0].workload.fingerprint
    with pytest.raises(ValueError):
        lut6.streamed_fingerprint("fp32")


def test_an_fp16_head_streamed_as_fp32_upcasts_has_its_own_fingerprint():
    options = RunOptions(runs=5)
    fp16 = resolve_workload("lm_head:64x256:fp16")
    fp32 = resolve_workload("lm_head:64x256:fp32")
    upcast = measure_workload(NumpyEngine(), "cpu", fp16, options)
    plain = measure_workload(NumpyEngine(), "cpu", fp32, options)
    assert upcast.engine.run_dtype == "fp32" and upcast.workload.weight_bytes == 64 * 256 * 4
    assert (
        upcast.workload.fingerprint != fp16.fingerprint
    )  # 2x the bytes of the fp16 head: not the same thing
    assert upcast.workload.fingerprint != fp32.fingerprint  # other values than the fp32 head's
    assert plain.workload.fingerprint == fp32.fingerprint  # read as stored: the fingerprint is unchanged


def test_published_comparison_pairs_only_identical_fingerprints_and_names_the_workload():
    llama = resolve_workload("llama_lm_head")
    mine = make_record(chip="Apple M6", gbps=40, engine="coreml", device="ane")
    upcast = mine.model_copy(update={"workload": mine.workload.model_copy(
        update={"fingerprint": llama.streamed_fingerprint("fp32")})})
    rows, notes = family_comparison([upcast])
    assert len(rows) == 1 and rows[0].yours and "same fingerprint" in notes[0]
    rows, _ = family_comparison([mine])
    assert len(rows) > 1 and {r.workload for r in rows} == {"llama_lm_head"}
    assert all(r.engine != "coreml:ane" or r.workload == "llama_lm_head" for r in rows)
