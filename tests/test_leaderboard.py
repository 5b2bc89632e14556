"""Issue 25: a results repository of immutable submissions, its deterministic leaderboard and `--check`,
and `compare --leaderboard`. The synthetic submissions are valid measured records from the project's
own builder (tests/leaderboard_repo.py), submitted through `submit --into`."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from anebench.report.leaderboard import CSV, DB, GENERATED, README, build, check
from anebench.report.leaderboard_submit import submit_into
from anebench.results.files import save_records
from anebench.results.leaderboard import SUBMISSION_SCHEMA, envelope, relative_path, scan, submission_json
from anebench.results.validate import InvalidFile
from clitools import run_cli
from leaderboard_repo import (
    CHIPS,
    SUBMISSIONS_PER_CHIP,
    TOOL,
    chip_gbps,
    make_repository,
    run_records,
    submit,
)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("leaderboard")
    return make_repository(base / "repo", base / "runs")


@pytest.fixture
def repo(built, tmp_path) -> Path:
    """A private copy of the built repository, for a test that changes it."""
    return Path(shutil.copytree(built, tmp_path / "repo"))


def outputs(root: Path) -> dict[str, bytes]:
    return {name: (root / name).read_bytes() for name in (*GENERATED, README)}


# --- the build: from the submissions alone, byte-identical every time ----------------------------------


def test_fifty_submissions_from_ten_chips_build_twice_byte_identical(built, tmp_path):
    files = sorted(p.relative_to(built).as_posix() for p in (built / "submissions").rglob("*.json"))
    assert len(files) == len(CHIPS) * SUBMISSIONS_PER_CHIP >= 50
    assert len({f.split("/")[1] for f in files}) == 10
    first = outputs(built)
    again = Path(shutil.copytree(built, tmp_path / "elsewhere"))  # another path, another time
    build(again)
    second = outputs(again)
    for name in first:
        assert first[name] == second[name], f"{name} differs between two builds"
    build(again)
    assert outputs(again) == first
    with sqlite3.connect(again / DB) as db:
        rows = db.execute("select chip, engine, submitters, contributors from matrix").fetchall()
        rejected = db.execute("select count(*) from rejected").fetchone()[0]
    assert {r[0] for r in rows} == set(CHIPS) and {r[1] for r in rows} == {"mlx", "coreml"}
    assert all(r[2] == SUBMISSIONS_PER_CHIP and r[3] == SUBMISSIONS_PER_CHIP for r in rows)
    assert rejected == 0
    assert check(again)[1] == []


def test_the_matrix_is_computed_from_the_submissions(built):
    with sqlite3.connect(built / DB) as db:
        (m1,) = db.execute("select median_gbps from matrix where chip = 'M1' and engine = 'mlx'").fetchone()
    figures = sorted(chip_gbps("M1", i) for i in range(SUBMISSIONS_PER_CHIP))
    assert m1 == pytest.approx(figures[2], rel=1e-3)  # the median submitter
    readme = (built / README).read_text()
    assert readme.count("| M1 |") == 2 and "(none)" in readme.split("Rejected submissions")[1]
    document = json.loads((built / "leaderboard/matrix.json").read_text())
    assert len(document["submissions"]) == 50 and document["rejected"] == []


def test_the_store_is_an_anebench_store_that_report_reads(built, capsys):
    code, out, err = run_cli(capsys, "report", "--db", str(built / DB), "--format", "csv")
    assert code == 0, err
    assert out.count("\nmatrix,") == 20


# --- --check: stale, hand-edited, tampered ---------------------------------------------------------------


def check_lines(capsys, root: Path) -> list[str]:
    code, out, err = run_cli(capsys, "leaderboard", "build", str(root), "--check")
    assert code != 0, out
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines and all(line.startswith("check failed: ") for line in lines), err  # one line each
    return lines


def test_check_passes_on_a_fresh_build(built, capsys):
    code, out, err = run_cli(capsys, "leaderboard", "build", str(built), "--check")
    assert code == 0, err
    assert "up to date: 50 submission(s)" in out


def test_check_fails_on_a_stale_table(repo, tmp_path, capsys):
    submit(repo, run_records("M4", 40.0, 999), tmp_path, "late")
    lines = check_lines(capsys, repo)
    assert any(
        line.startswith("check failed: README.md: the table between the markers differs") for line in lines
    )
    assert any(line.startswith(f"check failed: {CSV}: differs from a fresh build") for line in lines)
    assert any(line.startswith(f"check failed: {DB}: its content differs") for line in lines)
    build(repo)
    assert check(repo)[1] == []


def test_check_fails_on_a_hand_edited_number(repo, capsys):
    csv = repo / CSV
    row = next(line for line in csv.read_text().splitlines() if line.startswith("matrix,M1,"))
    figure = row.split(",")[16]  # median_gbps
    csv.write_text(csv.read_text().replace(row, row.replace(figure, "999.999")))
    readme = repo / README
    line = next(x for x in readme.read_text().splitlines() if x.startswith("| M1 |"))
    readme.write_text(readme.read_text().replace(line, line.replace("| 5 |", "| 6 |", 1)))
    with sqlite3.connect(repo / DB) as db:
        db.execute("update matrix set median_gbps = 999.999 where chip = 'M1'")
    db.close()
    lines = check_lines(capsys, repo)
    assert any(f"{CSV}: differs from a fresh build (line " in x and "999.999" in x for x in lines)
    assert any("README.md: the table between the markers differs" in x for x in lines)
    assert any(f"{DB}: its content differs from a fresh build" in x for x in lines)
    assert len(lines) == 3


def test_check_fails_on_a_summary_that_contradicts_its_samples(repo, capsys):
    path = sorted((repo / "submissions" / "m2").glob("*.json"))[0]
    data = json.loads(path.read_text())
    data["results"][0]["summary"]["median"] *= 0.5  # a faster figure than the samples give
    path.write_text(json.dumps(data))
    lines = check_lines(capsys, repo)
    rejected = [x for x in lines if ": rejected: " in x]
    assert len(rejected) == 1 and path.name in rejected[0]
    assert "summary.median" in rejected[0] and "contradicts the samples" in rejected[0]
    assert any("README.md" in x for x in lines)  # the table changes: the submission is kept out


def test_check_fails_on_an_impossible_bandwidth(repo, tmp_path, capsys):
    # a forged run that agrees with itself (samples, summary, ids) but reads faster than M1's memory can
    records = run_records("M1", 68.25 * 3, 7777)
    sub = envelope(records, TOOL, None, host_ids=True)
    target = repo / relative_path(sub)
    target.write_text(submission_json(sub))
    save_records(tmp_path / "forged.json", records)
    with pytest.raises(InvalidFile) as refused:  # `submit` refuses it as `ingest` would
        submit_into(tmp_path / "forged.json", tmp_path)
    assert any("above what the device can read" in line for line in refused.value.problems)
    lines = check_lines(capsys, repo)
    (rejected,) = [x for x in lines if ": rejected: " in x]
    assert target.name in rejected and "gbps:" in rejected and "above what the device can read" in rejected
    build(repo)
    with sqlite3.connect(repo / DB) as db:
        forged = "select count(*) from results where chip_key = 'M1' and gbps > 68.25"
        assert db.execute(forged).fetchone()[0] == 0
        (reason,) = db.execute("select reason from rejected").fetchone()
    assert "above what the device can read" in reason and "\n" not in reason
    assert (
        "Rejected submissions" in (repo / README).read_text() and target.name in (repo / README).read_text()
    )


def test_an_edited_environment_is_rejected(repo):
    path = sorted((repo / "submissions" / "m5").glob("*.json"))[0]
    data = json.loads(path.read_text())
    data["environment"]["power_source"] = "battery"
    path.write_text(json.dumps(data))
    (rejected,) = scan(repo).rejected
    assert rejected.path.endswith(path.name) and rejected.reason.startswith("environment: does not match")


def test_a_renamed_or_moved_submission_is_rejected_by_name(repo, capsys):
    path = sorted((repo / "submissions" / "m3").glob("*.json"))[0]
    moved = repo / "submissions" / "m4" / path.name
    path.rename(moved)
    reasons = {x.path: x.reason for x in scan(repo).rejected}
    assert "file belongs in submissions/m3/" in reasons[f"submissions/m4/{path.name}"]


# --- submit --into -------------------------------------------------------------------------------------


def test_submit_into_writes_an_immutable_envelope_and_refuses_a_duplicate(tmp_path, capsys):
    (tmp_path / "repo").mkdir()
    records = run_records("M4 Pro", 150.0, 1)
    save_records(tmp_path / "mine.json", records)
    (tmp_path / "run.log").write_text("warming up on my-mac in /Users/alice/bench\n")
    code, out, err = run_cli(
        capsys,
        "submit",
        str(tmp_path / "mine.json"),
        "--into",
        str(tmp_path / "repo"),
        "--log",
        str(tmp_path / "run.log"),
    )
    assert code == 0, err
    written = Path(out.split("submission: ")[1].strip())
    assert written.parent == tmp_path / "repo" / "submissions" / "m4-pro"
    data = json.loads(written.read_text())
    assert data["schema"] == SUBMISSION_SCHEMA and data["run_id"] == written.stem
    assert set(data["tool"]) == {"name", "version", "commit", "dirty"}
    assert data["environment"]["power_source"] == "ac" and "thermal_state" in data["environment"]
    assert data["log"].startswith("warming up") and data["environment"]["host_ids"] is True
    assert [r["id"] for r in data["results"]] == [r.id for r in records]
    before = written.read_bytes()
    for extra in ((), ("--drop-host-ids",)):  # the same run again, with or without its host ids
        code, out, err = run_cli(
            capsys, "submit", str(tmp_path / "mine.json"), "--into", str(tmp_path / "repo"), *extra
        )
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "already submitted" in err or "the same samples" in err
    assert written.read_bytes() == before and len(list((tmp_path / "repo").rglob("*.json"))) == 1


def test_submit_into_drops_host_ids_from_records_and_log(tmp_path, capsys):
    (tmp_path / "repo").mkdir()
    save_records(tmp_path / "mine.json", run_records("M4", 60.0, 2))
    (tmp_path / "run.log").write_text("measured in /Users/alice/bench\n")
    code, out, err = run_cli(
        capsys,
        "submit",
        str(tmp_path / "mine.json"),
        "--into",
        str(tmp_path / "repo"),
        "--log",
        str(tmp_path / "run.log"),
        "--drop-host-ids",
    )
    assert code == 0, err
    data = json.loads(Path(out.split("submission: ")[1].strip()).read_text())
    assert all(r["host"]["fingerprint"] == "" for r in data["results"])
    assert "alice" not in json.dumps(data) and data["environment"]["host_ids"] is False
    assert scan(tmp_path / "repo").rejected == []  # what submit writes, build accepts


def test_submit_into_refuses_an_invalid_file_and_writes_nothing(tmp_path, capsys):
    (tmp_path / "repo").mkdir()
    data = json.loads(
        json.dumps(
            {
                "schema": "anebench.results/2",
                "results": [run_records("M4", 60.0, 3)[0].model_dump(mode="json", by_alias=True)],
            }
        )
    )
    data["results"][0]["samples_s"] = [s * 0.5 for s in data["results"][0]["samples_s"]]
    (tmp_path / "bad.json").write_text(json.dumps(data))
    code, _, err = run_cli(capsys, "submit", str(tmp_path / "bad.json"), "--into", str(tmp_path / "repo"))
    assert code == 2 and "contradicts the samples" in err
    assert not list((tmp_path / "repo").rglob("*.json"))


# --- compare --leaderboard -------------------------------------------------------------------------------


def test_compare_places_a_run_within_its_chips_submissions(built, tmp_path, capsys):
    figures = sorted((chip_gbps("M4", i) for i in range(SUBMISSIONS_PER_CHIP)), reverse=True)
    mine = run_records("M4", (figures[1] + figures[2]) / 2, 4242)  # between the 2nd and 3rd fastest
    save_records(tmp_path / "mine.json", mine)
    code, out, err = run_cli(
        capsys, "compare", str(tmp_path / "mine.json"), "--leaderboard", str(built), "--format", "json"
    )
    assert code == 0, err
    placements = {(p["engine"], p["device"]): p for p in json.loads(out)["placements"]}
    gpu = placements[("mlx", "gpu")]
    assert gpu["rank"] == 3 and gpu["of"] == SUBMISSIONS_PER_CHIP + 1
    low, middle, high, spread = gpu["spread"]
    assert low == pytest.approx(figures[-1], rel=1e-3) and high == pytest.approx(figures[0], rel=1e-3)
    assert middle == pytest.approx(figures[2], rel=1e-3) and spread == pytest.approx((high - low) / middle)
    assert all(p["submission"].startswith("submissions/m4/") for p in gpu["peers"])
    code, out, err = run_cli(capsys, "compare", str(tmp_path / "mine.json"), "--leaderboard", str(built))
    assert code == 0 and "3 of 6" in out


def test_compare_leaves_the_run_itself_out_of_its_peers(built, tmp_path, capsys):
    repo = Path(shutil.copytree(built, tmp_path / "repo"))
    mine = run_records("M4", 1.0, 4343)  # the slowest M4 by far
    save_records(tmp_path / "mine.json", mine)
    code, _, err = run_cli(
        capsys, "submit", str(tmp_path / "mine.json"), "--into", str(repo), "--drop-host-ids"
    )
    assert code == 0, err
    code, out, err = run_cli(
        capsys, "compare", str(tmp_path / "mine.json"), "--leaderboard", str(repo), "--format", "json"
    )
    assert code == 0, err
    for placement in json.loads(out)["placements"]:
        assert placement["own_submission"].startswith("submissions/m4/")
        assert placement["rank"] == placement["of"] == SUBMISSIONS_PER_CHIP + 1  # not paired with itself
    assert "already in the repository" in err
