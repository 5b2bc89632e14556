"""Every suite end to end through the CLI, on numpy, torch (CPU) and mlx (CPU), with small sizes."""

import json

import pytest

from anebench.model import DOCUMENT_SCHEMA
from clitools import document_results, run_cli

ENGINES = ("-e", "numpy", "-e", "torch", "-e", "mlx")
QUICK = ("--runs", "3", "--warmup", "1", "--time-budget", "0.2")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"




def document(stdout):
    data = json.loads(stdout)  # exactly one JSON document, nothing else on stdout
    assert data["schema"] == DOCUMENT_SCHEMA
    return document_results(data)  # each point whole: its suite result joined in


def assert_plots(stem):
    png, svg = stem.parent / f"{stem.name}.png", stem.parent / f"{stem.name}.svg"
    assert png.read_bytes().startswith(PNG_MAGIC) and png.stat().st_size > 10_000
    assert svg.read_text().lstrip().startswith("<?xml") and "<svg" in svg.read_text()


SWEEP = ("-w", "lm_head:256x8:fp32", "--min-mb", "1", "--max-mb", "8", "--points", "4", "--cache-mb", "0.25")


SWEEP_SUITES = ("sweep", "latency-sweep")  # what run_sweep's points are measured as (a sweep, a small one)


def scripted_sweep(monkeypatch, overhead_s=5e-6, bytes_per_s=10e9):
    """Every sweep measurement really runs (engine, output check, timing), then its samples are replaced by a
    clean line, so the fit's gates see a good sweep whatever the load of this shared machine."""
    from dataclasses import replace

    import anebench.orchestration.suites.sweep as sweep_suite
    from fakepipeline import real_measure_parts as real
    from fakepipeline import state_executor

    def clean(measurement):
        latency = overhead_s + measurement.facts.weight_bytes / bytes_per_s
        samples = [latency] * len(measurement.timing.samples_s)
        # one clean line: no rounds (their places in the interleaved group) to fit one by one
        sections = {k: v for k, v in measurement.sections.items() if k != "repetitions"}
        return replace(measurement, timing=replace(measurement.timing, samples_s=samples, repetitions=None),
                       sections=sections)

    def measure(engine, device, workload, options, progress=None, **kwargs):  # one size at a time
        measurement = real(engine, device, workload, options, progress, **kwargs)
        return clean(measurement) if options.suite in SWEEP_SUITES else measurement  # only the sweep's points

    state_executor(monkeypatch, measure_parts=measure)
    in_rounds = sweep_suite.measure_in_rounds  # in interleaved rounds: the sweep builds each size's record
    monkeypatch.setattr(sweep_suite, "measure_in_rounds",
                        lambda *args, **kw: [clean(m) for m in in_rounds(*args, **kw)])


def test_sweep_fits_and_plots(capsys, tmp_path, monkeypatch):
    scripted_sweep(monkeypatch)  # a good numpy sweep: 5 us + bytes / 10 GB/s
    out = tmp_path / "sweep.json"
    code, stdout, stderr = run_cli(
        capsys, "sweep", "-e", "numpy", *SWEEP, *QUICK, "--out", str(out), "--json"
    )
    assert code == 0, stderr
    records = document(stdout)
    assert len(records) == 6 and [r["sweep"]["point"] for r in records] == list(range(6))
    for record in records:
        sweep = record["sweep"]
        assert sweep["fit"]["points"] == 6 and sweep["fit"]["bandwidth_gbps"] == pytest.approx(10)
        assert (
            sweep["fit"]["overhead_s"] == pytest.approx(5e-6)
            and sweep["in_fit"]
            and sweep["fit_error"] is None
        )
        assert "4x the last-level cache" in sweep["knee_rule"] and sweep["cache_bytes"] == 1024**2 // 4
        assert record["device_time"] and record["suite"] == "sweep"
    assert (
        "sweep fit" in stderr and "overhead µs" in stderr and "10.00" in stderr
    )  # tables: stderr under --json
    assert "fit: Theil-Sen" in stderr and "; fit failed" not in stderr
    assert_plots(tmp_path / "sweep.sweep")
    assert document_results(json.loads(out.read_text())) == records


def test_sweep_of_two_workloads_writes_one_plot_each(capsys, tmp_path):
    """Real timings: on this shared machine a tiny sweep may fail its fit gates; its plots are written
    anyway."""
    code, _, stderr = run_cli(capsys, "sweep", "-e", "numpy", *SWEEP, "-w", "lm_head:128x8:fp32", *QUICK,
                              "--no-save", "--plot", str(tmp_path / "p"))
    assert code == 0 or (code == 3 and "fit failed" in stderr), stderr  # 3: analysis failed, records saved
    assert_plots(tmp_path / "p.sweep.0-numpy-cpu")
    assert_plots(tmp_path / "p.sweep.1-numpy-cpu")
    assert "hidden 128" in (tmp_path / "p.sweep.1-numpy-cpu.svg").read_text()


def test_sweep_runs_on_torch_and_mlx(capsys, tmp_path):
    """On this shared 2-core machine torch's CPU threads stall when another job holds a core, so a tiny
    sweep can come out too noisy to fit: then the records are still saved and the reason is given."""
    out = tmp_path / "sweep.json"
    code, _, stderr = run_cli(capsys, "sweep", "-e", "torch", "-e", "mlx", *SWEEP, *QUICK, "--out", str(out))
    records = document_results(json.loads(out.read_text()))
    assert {r["engine"]["name"] for r in records} == {"torch", "mlx"} and len(records) == 12
    for engine in ("torch", "mlx"):
        sweep = next(r for r in records if r["engine"]["name"] == engine)["sweep"]
        if sweep["fit"] is not None:
            assert_plots(tmp_path / f"sweep.sweep.{engine}-cpu")
        else:
            assert code == 3 and sweep["fit_error"] and f"{engine}:cpu: {sweep['fit_error']}" in stderr
    assert code in (0, 3), stderr


def test_sweep_refuses_sizes_that_leave_no_fit_before_measuring(capsys, tmp_path):
    code, stdout, stderr = run_cli(capsys, "sweep", "-e", "numpy", "--max-mb", "4", "--cache-mb", "100")
    assert code == 2 and stdout == "" and "raise --max-mb" in stderr
    assert len(stderr.strip().splitlines()) == 1 and list(tmp_path.iterdir()) == []
    code, _, stderr = run_cli(capsys, "sweep", "-e", "numpy", "--min-mb", "8", "--max-mb", "4")
    assert code == 2 and "--min-mb" in stderr


def test_roofline_every_engine_table_and_plot(capsys, tmp_path):
    code, stdout, stderr = run_cli(
        capsys,
        "roofline",
        *ENGINES,
        "-w",
        "lm_head:64x256:fp32",
        "--max-batch",
        "8",
        *QUICK,
        "--out",
        str(tmp_path / "r.json"),
    )
    # batch 8 cannot confirm a ridge: the analysis fails (exit 3), the records and plots are kept
    assert code == 3 and "analysis failed: ridge not found" in stderr, stderr
    assert "bytes/FLOP" in stdout and "GFLOP/s" in stdout and "ridge" in stderr
    saved = document_results(json.loads((tmp_path / "r.json").read_text()))
    assert [r["workload"]["batch"] for r in saved if r["engine"]["name"] == "numpy"] == [1, 2, 4, 8]
    roof = saved[-1]["roofline"]
    assert roof["flop_per_s"] == pytest.approx(2 * 64 * 256 * 8 / saved[-1]["summary"]["median"])
    assert_plots(tmp_path / "r.roofline.0-numpy-cpu")


def test_latency_uses_the_smallest_workload_and_a_saved_sweep(capsys, tmp_path, monkeypatch):
    scripted_sweep(monkeypatch)
    sweep_file = tmp_path / "s.json"
    code, _, stderr = run_cli(capsys, "sweep", "-e", "numpy", "-w", "lm_head:256x8:fp32", "--min-mb", "0.25",
                              "--max-mb", "2", "--points", "4", "--cache-mb", "0.1", *QUICK, "--out",
                              str(sweep_file))
    assert code == 0, stderr
    code, stdout, stderr = run_cli(capsys, "latency", *ENGINES, "--sweep", str(sweep_file), "--runs", "50",
                                   "--no-save", "--json")
    assert code == 0, stderr
    records = document(stdout)
    fitted = document_results(json.loads(sweep_file.read_text()))[0]["sweep"]["fit"]["overhead_s"] * 1e6
    by_engine = {r["engine"]["name"]: r for r in records}
    assert by_engine["numpy"]["latency"]["sweep_overhead_us"] == pytest.approx(fitted)
    assert by_engine["torch"]["latency"]["sweep_overhead_us"] is None  # no torch sweep in the file
    for record in records:
        latency = record["latency"]
        assert latency["median_us"] <= latency["p95_us"] and record["workload"]["shape"][1] == 64
    assert "no sweep for some engine" in stderr


def test_compute_reports_tflops_per_dtype(capsys, tmp_path):
    code, stdout, stderr = run_cli(capsys, "compute", *ENGINES, "-w", "lm_head:64x256", "--batch", "16",
                                   "--dtype", "fp32", "--dtype", "fp16", *QUICK, "--no-save", "--json")
    assert code in (0, 3), stderr  # 3: a tiny head at batch 16 is not compute-bound on every engine
    records = document(stdout)
    assert len(records) == 6 and {r["workload"]["dtype"] for r in records} == {"fp32", "fp16"}
    for record in records:
        c = record["compute"]
        assert c["tflop_per_s"] == pytest.approx(2 * 64 * 256 * 16 / record["summary"]["median"] / 1e12)
        assert c["half_batch"] == 8 and isinstance(c["compute_bound"], bool)


def test_concurrent_threads_every_engine_with_verdict_rule_and_plot(capsys, tmp_path):
    code, stdout, stderr = run_cli(
        capsys,
        "concurrent",
        *ENGINES,
        "-w",
        "lm_head:64x1024:fp32",
        "--runs",
        "5",
        "--warmup",
        "1",
        "--out",
        str(tmp_path / "c.json"),
    )
    assert code == 0, stderr
    assert "scaling" in stdout and "verdict" in stdout
    assert "verdict rule: scaling = combined GB/s / mean solo GB/s" in stderr
    saved = document_results(json.loads((tmp_path / "c.json").read_text()))
    assert len(saved) == 12  # 3 engines x 2 copies x (solo, together)
    for i, engine in enumerate(("numpy", "torch", "mlx")):
        assert_plots(tmp_path / f"c.concurrent.{i}-{engine}-cpu")


def test_concurrent_processes_option(capsys):
    code, stdout, stderr = run_cli(
        capsys,
        "concurrent",
        "-e",
        "numpy",
        "-w",
        "lm_head:128x2048:fp32",
        "--copies",
        "2",
        "--processes",
        "--runs",
        "5",
        "--warmup",
        "1",
        "--no-save",
        "--json",
    )
    assert code == 0, stderr
    records = document(stdout)
    assert records[-1]["concurrency"]["mode"] == "processes" and "extras" not in records[-1]
    # the common window holds every copy's runs whole: the stop rule no longer depends on scheduling
    assert all(r["concurrency"]["whole_calls_in_window"] >= 5 for r in records[2:])
    assert "no plot written" in stderr


def test_power_flag_records_energy_or_why_not(capsys):
    code, stdout, stderr = run_cli(capsys, "latency", "-e", "numpy", "--no-sweep", "--power", "--runs", "20",
                                   "--no-save", "--json")
    assert code == 0, stderr
    (record,) = document(stdout)
    energy = record["energy"]
    assert energy["available"] or energy["reason"]
    assert "extras" not in record
    assert "energy" in stderr


@pytest.mark.parametrize("argv, expected", [
    (("concurrent", "-e", "numpy", "--copies", "1"), "--copies"),
    (("roofline", "-e", "numpy", "--max-batch", "1"), "--max-batch"),
    (("compute", "-e", "numpy", "--dtype", "int3"), "--dtype"),
    (("latency", "-e", "numpy", "--sweep", "missing.json"), "missing.json"),
    (("sweep", "-e", "torch", "-d", "cuda:7"), "cuda:7"),
])
def test_bad_suite_options_exit_2_with_one_line(capsys, tmp_path, argv, expected):
    code, stdout, stderr = run_cli(capsys, *argv)
    assert code == 2 and stdout == "" and expected in stderr
    assert len(stderr.strip().splitlines()) == 1


@pytest.mark.cuda
def test_cuda_suites_record_device_time_for_every_sample(capsys, tmp_path):
    code, stdout, stderr = run_cli(
        capsys,
        "roofline",
        "-e",
        "torch",
        "-d",
        "cuda:0",
        "-w",
        "lm_head:1024x8192:fp16",
        "--max-batch",
        "4",
        *QUICK,
        "--no-save",
        "--json",
    )
    assert code == 0, stderr
    for record in document(stdout):
        assert record["device_time"] == "CUDA events around each call"
        assert len(record["device_samples_s"]) == len(record["samples_s"]) and record["device_gbps"] > 0
    code, stdout, stderr = run_cli(capsys, "concurrent", "-e", "torch", "-d", "cuda:0", "-w",
                                   "lm_head:1024x8192:fp16", "--runs", "5", "--no-save", "--json")
    assert code == 0, stderr
    assert all(len(r["device_samples_s"]) == len(r["samples_s"]) for r in document(stdout))


def test_latency_survives_a_quick_sweep_without_a_fit(capsys, monkeypatch):
    import anebench.orchestration.suites.sweep as sweep_suite

    def unfittable(engine, device, base, plan, options, progress):
        from anebench.measure.sweep import Knee, SweepAnalysis

        error = "latency does not grow with size past the knee"
        return sweep_suite.SweepResult(
            [], SweepAnalysis(Knee(0, 1, "rule"), None, 1.0, 1, [], error), None, error
        )

    monkeypatch.setattr(sweep_suite, "plan_sweep", lambda *args, **kwargs: sweep_suite.SweepPlan([1], None))
    monkeypatch.setattr(sweep_suite, "run_sweep", unfittable)
    code, stdout, stderr = run_cli(capsys, "latency", "-e", "numpy", "--runs", "20", "--no-save", "--json")
    assert code == 0, stderr
    (record,) = document(stdout)
    assert record["latency"]["sweep_overhead_us"] is None
    assert "numpy:cpu: no sweep-fitted overhead (latency does not grow" in stderr
