"""The bundle cache (reuse, manifest, nothing half-written) and the `anebench build` command."""

from __future__ import annotations

import json

import pytest

from anebench.artifacts import BuildSpec, build_or_reuse, default_cache_dir
from anebench.artifacts import cache as cache_module
from anebench.artifacts.cache import MANIFEST_NAME, file_sha256
from anebench.workloads import Workload
from clitools import run_cli

TINY = Workload("tiny_head", 64, 1024, "fp16", seed=7)


def spec(quant: str = "fp16", **kwargs) -> BuildSpec:
    return BuildSpec(TINY, quant, max_split_rows=128, **kwargs)


def test_second_build_is_reused_without_rebuilding(tmp_path, monkeypatch):
    first = build_or_reuse(spec(), tmp_path)
    assert not first.reused

    def no_rebuild(*_args, **_kwargs):
        raise AssertionError("the cached bundle should have been reused")

    monkeypatch.setattr(cache_module, "build_bundle", no_rebuild)
    second = build_or_reuse(spec(), tmp_path)
    assert second.reused and second.package == first.package and second.manifest == first.manifest


def test_manifest_records_spec_version_bytes_and_hash(tmp_path):
    import coremltools

    artifact = build_or_reuse(spec("lut6"), tmp_path)
    manifest = json.loads((artifact.package.parent / MANIFEST_NAME).read_text())
    assert manifest["key"] == spec("lut6").key == artifact.package.parent.name
    assert manifest["coremltools"] == coremltools.__version__ == manifest["spec"]["coremltools"]
    assert manifest["spec"]["quant"] == "lut6" and manifest["spec"]["group_size"] == 8
    assert manifest["weight_bytes"] == artifact.open().weight_bytes
    weight_file = artifact.package / manifest["weight_file"]
    assert manifest["weight_sha256"] == file_sha256(weight_file)
    assert manifest["workload_fingerprint"] == TINY.fingerprint


def test_key_depends_on_what_changes_the_bytes():
    keys = {spec(q).key for q in ("fp16", "int8", "lut4", "lut6")}
    keys.add(spec(repeat=2).key)
    keys.add(BuildSpec(Workload("tiny_head", 64, 1024, "fp16", seed=8), max_split_rows=128).key)
    assert len(keys) == 6
    renamed = Workload("another_name", 64, 1024, "fp16", seed=7, batch=4)
    assert BuildSpec(renamed, max_split_rows=128).key == spec().key  # name and batch do not change bytes


def test_failed_build_leaves_nothing(tmp_path, monkeypatch):
    def broken(*_args, **_kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(cache_module, "describe_bundle", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        build_or_reuse(spec(), tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_incomplete_entry_is_rebuilt(tmp_path):
    first = build_or_reuse(spec(), tmp_path)
    weight_file = first.package / first.manifest["weight_file"]
    weight_file.write_bytes(weight_file.read_bytes()[:1000])  # truncated
    again = build_or_reuse(spec(), tmp_path)
    assert (
        not again.reused and file_sha256(again.package / again.manifest["weight_file"]) == first.weight_sha256
    )


def test_cache_dir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ANEBENCH_CACHE_DIR", str(tmp_path / "here"))
    assert default_cache_dir() == tmp_path / "here"
    monkeypatch.delenv("ANEBENCH_CACHE_DIR")
    assert "anebench" in str(default_cache_dir())


def test_every_cache_shares_one_root_with_or_without_the_environment(tmp_path, monkeypatch):
    """The bundle cache and the tensor-hash cache used to disagree on the root without the environment."""
    from anebench.workloads.checkpoints import tensor_hash

    monkeypatch.setenv("ANEBENCH_CACHE_DIR", str(tmp_path / "here"))
    assert default_cache_dir() == tensor_hash.cache_dir().parent == tmp_path / "here"
    monkeypatch.delenv("ANEBENCH_CACHE_DIR")
    assert default_cache_dir() == tensor_hash.cache_dir().parent


def test_build_command_json_out_and_reuse(tmp_path, capsys):
    args = ["build", "lm_head:64x1024", "--quant", "lut6", "--max-split-rows", "128",
            "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out"), "--json"]
    code, out, _err = run_cli(capsys, *args)
    assert code == 0
    document = json.loads(out)  # exactly one JSON document on stdout
    assert document["weight_bytes"] == 1024 * 64 * 6 // 8 + 128 * 64 * 2 and not document["reused"]
    copied = tmp_path / "out" / document["package"]
    assert copied.is_dir() and str(copied) == document["bundle"]
    assert file_sha256(copied / document["weight_file"]) == document["weight_sha256"]
    code, out, _ = run_cli(capsys, *args)
    assert json.loads(out)["reused"] is True


@pytest.mark.parametrize("args,message", [
    (["build", "lm_head:64x1001", "--quant", "lut6"], "not divisible by the LUT group size"),
    (["build", "nonsense_head"], "unknown workload 'nonsense_head'"),
])
def test_build_command_refusals_exit_2(tmp_path, capsys, args, message):
    code, out, err = run_cli(capsys, *args, "--cache-dir", str(tmp_path))
    assert code == 2 and message in err and out == ""


def test_build_command_rejects_unknown_quant(tmp_path, capsys):
    code, _, err = run_cli(capsys, "build", "llama_lm_head", "--quant", "fp8", "--cache-dir", str(tmp_path))
    assert code == 2 and "fp8" in err


def test_unwritable_out_or_cache_dir_is_one_line_exit_2(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    cache = tmp_path / "cache"
    code, out, err = run_cli(capsys, "build", "lm_head:64x1024", "--max-split-rows", "128",
                             "--cache-dir", str(cache), "--out", str(blocker / "bundles"))
    assert code == 2 and out == "" and "--out" in err and "cannot copy the bundle there" in err
    assert not list(blocker.parent.glob("**/*.partial"))
    code, out, err = run_cli(capsys, "build", "lm_head:64x1024", "--cache-dir", str(blocker / "cache"))
    assert code == 2 and out == "" and "cannot write there" in err
    assert err.strip().splitlines()[-1].startswith("error: bundle cache") and err.count("error:") == 1


def test_build_without_coremltools_says_how_to_install_it(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "coremltools", None)  # what `import coremltools` meets when missing
    code, out, err = run_cli(capsys, "build", "lm_head:64x1024", "--cache-dir", str(tmp_path))
    assert code == 2 and out == ""
    assert "coremltools is not installed" in err and "anebench[coreml]" in err
    assert len(err.strip().splitlines()) == 1


def test_copy_bundle_replaces_an_older_copy_whole_and_leaves_no_staging(tmp_path):
    from anebench.artifacts.export import copy_bundle

    package = tmp_path / "head.mlpackage"
    (package / "Data").mkdir(parents=True)
    (package / "Data" / "weight.bin").write_bytes(b"new")
    out = tmp_path / "out"
    (out / "head.mlpackage").mkdir(parents=True)
    (out / "head.mlpackage" / "stale.bin").write_bytes(b"old")
    target = copy_bundle(package, out)
    assert (target / "Data" / "weight.bin").read_bytes() == b"new"
    assert not (target / "stale.bin").exists()
    assert sorted(p.name for p in out.iterdir()) == ["head.mlpackage"]
