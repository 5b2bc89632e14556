"""`anebench decode` end to end: the table, the record, Core ML's dry run and refusal, reports, compare."""

from __future__ import annotations

import json

import pytest

from anebench.results.files import load_result_file
from clitools import run_cli
from fakehost import pretend_linux_host

TINY = dict(
    model_type="llama",
    hidden_size=128,
    intermediate_size=256,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=2000,
    tie_word_embeddings=False,
    torch_dtype="float16",
)
FAST = ("--runs", "3", "--warmup", "1", "--no-sweep")


@pytest.fixture
def tiny(tmp_path):
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(TINY))
    return folder


@pytest.fixture(autouse=True)
def no_default_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ANEBENCH_DATA_DIR", str(tmp_path / "data"))


def test_decode_measures_each_depth_and_stores_the_accounting(tiny, tmp_path, capsys):
    out = tmp_path / "d.json"
    code, stdout, stderr = run_cli(
        capsys,
        "decode",
        str(tiny),
        "-e",
        "numpy",
        "--depth",
        "0,32",
        *FAST,
        "-o",
        str(out),
        "--plot",
        str(tmp_path / "plot"),
    )
    assert code == 0, stderr
    assert "tok/s" in stdout and "not a full model" in stdout
    assert "kv cache" in stdout and "2x2x2x32x32" in stdout  # the accounting at the deepest depth
    records = load_result_file(out)
    assert [r.decode.depth for r in records] == [0, 32]
    assert all(r.suite == "decode" and r.method.output_check.passed for r in records)
    deep = records[1]
    assert (
        deep.workload.weight_bytes
        == deep.decode.stream_bytes
        == sum(row.streamed_bytes for row in deep.decode.accounting)
    )
    assert deep.decode.prediction is None and "no stored sweep" in deep.decode.prediction_error
    assert records[0].workload.fingerprint != deep.workload.fingerprint  # depth changes the bytes
    assert (tmp_path / "plot.png").is_file()


def test_predict_without_a_sweep_says_failed_and_measures_nothing(tiny, capsys):
    code, stdout, stderr = run_cli(
        capsys, "decode", str(tiny), "-e", "numpy", "-e", "torch:cpu", "--predict", "--no-sweep"
    )
    assert code == 0, stderr
    assert "failed" in stdout and "no stored sweep of numpy:cpu" in stdout
    assert "no stored sweep of torch:cpu" in stdout  # ENGINE:DEVICE, one table
    assert "saved" not in stderr


def test_coreml_dry_run_lists_chunks_bytes_and_predicts_per_token(capsys):
    code, stdout, stderr = run_cli(
        capsys, "decode", "llama-3.1-8b", "-e", "coreml", "--dry-run", "--depth", "2048"
    )
    assert code == 0, stderr
    assert "chunk 1/" in stdout and "lm_head" in stdout and "embedding" in stdout
    assert "predicts per token" in stdout
    code, stdout, stderr = run_cli(
        capsys, "decode", "qwen3-0.6b", "-e", "coreml", "-e", "numpy", "--dry-run", "--json"
    )
    assert code == 0, stderr
    document = json.loads(stdout)
    chunks = document["dry_run"][0]["chunks"]
    assert [c["kind"] for c in chunks] == ["embedding", "layers", "lm_head"]
    assert document["dry_run"][1] == {
        "target": "numpy:cpu",
        "depth": 0,
        "dispatches": 28 * 7 + 1,
        "bytes": 2383937536,
    }
    assert all(
        p["prediction"] is None and "no stored sweep" in p["why_none"] for p in document["predictions"]
    )


def test_coreml_decode_is_refused_in_one_line_before_building(capsys, tmp_path, monkeypatch):
    pretend_linux_host(monkeypatch)  # the refusal is of hosts without Core ML
    monkeypatch.setenv("ANEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    code, stdout, stderr = run_cli(capsys, "decode", "qwen3-0.6b", "-e", "coreml")
    assert code != 0
    assert "decode -e coreml cannot measure here" in stderr and len(stderr.strip().splitlines()) == 1
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize(
    "argv, why",
    [
        (("--depth", "x"), "--depth"),
        (("-w", "llama_lm_head"), "not -w"),
    ],
)
def test_bad_options_are_one_line(tiny, capsys, argv, why):
    code, _, stderr = run_cli(capsys, "decode", str(tiny), "-e", "numpy", *argv)
    assert code != 0 and why in stderr


def test_reports_have_a_decode_section_and_compare_pairs_decode_results(tiny, tmp_path, capsys):
    a, b, db = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "db.sqlite"
    for out in (a, b):
        code, _, stderr = run_cli(
            capsys, "decode", str(tiny), "-e", "numpy", "--depth", "16", *FAST, "-o", str(out)
        )
        assert code == 0, stderr
    code, stdout, stderr = run_cli(capsys, "compare", str(a), str(b))
    assert code == 0, stderr
    assert "decode:tiny@16" in stdout
    assert run_cli(capsys, "ingest", "--db", str(db), str(a))[0] == 0
    for fmt in ("md", "html", "csv", "json"):
        code, stdout, stderr = run_cli(capsys, "report", "--db", str(db), "--format", fmt)
        assert code == 0, stderr
        assert ("Decode: tiny" in stdout) or ('"decode"' in stdout) or ("decode," in stdout), fmt
        assert "tok/s" in stdout or fmt == "csv"


def test_a_checkpoint_folder_streams_its_own_tensors(tmp_path, capsys):
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=500,
        tie_word_embeddings=False,
    )
    model = transformers.LlamaForCausalLM(config).to(torch.float16)
    model.save_pretrained(tmp_path / "m", safe_serialization=True)
    linears = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    out = tmp_path / "c.json"
    code, stdout, stderr = run_cli(
        capsys, "decode", str(tmp_path / "m"), "-e", "numpy", *FAST, "-o", str(out)
    )
    assert code == 0, stderr
    assert "weights: checkpoint" in stderr
    record = load_result_file(out)[0]
    rows = {r.kind: r for r in record.decode.accounting}
    kinds = ("q", "k", "v", "o", "gate", "up", "down", "lm_head")
    assert sum(rows[k].stored_bytes for k in kinds) == 2 * linears  # the config's arithmetic = the model's
    assert record.decode.weights == "checkpoint" and record.method.output_check.passed


def test_the_campaign_step_runs_what_this_host_has_and_says_what_it_leaves_out(capsys, monkeypatch):
    from anebench.orchestration.suites import decode as decode_suite

    monkeypatch.setattr(decode_suite, "CAMPAIGN_TARGETS", (("numpy", "cpu"), ("coreml", "nowhere")))
    code, stdout, stderr = run_cli(capsys, "decode", "--campaign", "--predict", "--no-sweep")
    assert code == 0, stderr
    assert "coreml:nowhere: not available here" in stderr
    assert "numpy:cpu  qwen3-0.6b" in stdout and "2048" in stdout
    code, _, stderr = run_cli(capsys, "decode", "--campaign", "qwen3-0.6b")
    assert code != 0 and "--campaign chooses" in stderr


def test_no_model_and_no_campaign_is_one_line(capsys):
    code, _, stderr = run_cli(capsys, "decode")
    assert code != 0 and "give MODEL" in stderr


def test_power_records_energy_and_the_table_gives_joules_per_token_per_component(tiny, tmp_path, capsys):
    from anebench.model import ComponentEnergy, Energy
    from anebench.report.decode_tables import decode_table

    out = tmp_path / "p.json"
    code, _, stderr = run_cli(capsys, "decode", str(tiny), "-e", "numpy", *FAST, "--power", "-o", str(out))
    assert code == 0, stderr
    record = load_result_file(out)[0]
    assert record.energy is not None and (record.energy.available or record.energy.reason)
    energy = Energy(
        available=True,
        joules_per_call=0.5,
        calls=3,
        components=[
            ComponentEnergy(component="ane", available=True, joules_per_call=0.2),
            ComponentEnergy(component="dram", available=True, joules_per_call=0.1),
        ],
    )
    table = decode_table([record.model_copy(update={"energy": energy})])
    assert table.columns[-1] == "J/token" and table.rows[0][-1] == "0.5; ane 0.2; dram 0.1"
