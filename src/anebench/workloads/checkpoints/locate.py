"""Finding a checkpoint: a local model directory or a model already in the Hugging Face cache.

Nothing here touches the network: a model missing from the cache is an error that says how to
download it. Pickle checkpoints (``pytorch_model.bin``) are never loaded - unpickling can run code.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import UserError
from ...model.statistics import MiB
from ...util.inputs import loads, read_input_bytes
from .safetensors_file import TensorEntry, read_header

SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
PICKLE_NAMES = ("pytorch_model.bin", "pytorch_model.bin.index.json", "*.bin", "*.pt", "*.pth", "*.ckpt")
REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")  # a commit hash or a branch-like name


@dataclass
class Checkpoint:
    """A model's safetensors files and every tensor in them."""

    model: str  # a display name: ORG/NAME for the cache, the directory name otherwise
    directory: Path
    tensors: dict[str, TensorEntry]
    config: dict = field(default_factory=dict)
    revision: str | None = None  # the cache snapshot, when found through the Hugging Face cache
    layout: str = ""  # single file, sharded with index, ...
    # Every file the checkpoint is read from (shards, index, config) and the names a reader of this
    # folder would take for its own (config.json, the index): no output of the command may replace them.
    files: list[Path] = field(default_factory=list)


def split_spec(spec: str) -> tuple[str, str | None]:
    """``hf:PATH[:TENSOR]`` -> (PATH, TENSOR or None); a PATH that exists as given wins over a split."""
    rest = spec.removeprefix("hf:")
    if not rest.strip():
        raise UserError(f"workload {spec!r}: give a model, hf:PATH[:TENSOR] or hf:ORG/NAME[:TENSOR]")
    if Path(rest).expanduser().exists() or ":" not in rest:
        return rest, None
    path, tensor = rest.rsplit(":", 1)
    return path, (tensor or None)


def hub_cache_dir() -> Path:
    """The Hugging Face hub cache, resolved the way huggingface_hub resolves it."""
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(variable):
            return Path(os.environ[variable]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "huggingface" / "hub"


def find_in_hub_cache(repo_id: str) -> tuple[Path, str]:
    """The snapshot directory of ``repo_id`` that refs/main points to (or the only one there is)."""
    cache = hub_cache_dir()
    repo_dir = cache / ("models--" + repo_id.replace("/", "--"))
    download = (
        f"download it first, e.g. `huggingface-cli download {repo_id} --include '*.safetensors' '*.json'` "
        "(anebench never downloads)"
    )
    snapshots = repo_dir / "snapshots"
    if not snapshots.is_dir():
        raise UserError(
            f"hf:{repo_id}: not a local directory and not in the Hugging Face cache {cache}; {download}"
        )
    revision = read_ref(repo_dir / "refs" / "main", snapshots)
    if revision and (snapshots / revision).is_dir():
        return snapshots / revision, revision
    available = sorted(p for p in snapshots.iterdir() if p.is_dir())
    if len(available) == 1:
        return available[0], available[0].name
    if not available:
        raise UserError(f"hf:{repo_id}: the cache {repo_dir} has no snapshot; {download}")
    raise UserError(
        f"hf:{repo_id}: refs/main is missing and the cache has {len(available)} snapshots "
        f"({', '.join(p.name[:12] for p in available)}); name one as hf:{snapshots}/REVISION"
    )


def read_ref(ref: Path, snapshots: Path) -> str | None:
    """The revision refs/main names, confined to the cache: one plain name of a snapshot directory
    there (a ref such as ``../../../etc`` or an absolute path is refused, not followed)."""
    if not ref.is_file():
        return None
    try:
        revision = read_input_bytes(ref, "", 4096).decode("utf-8").strip()
    except (UserError, UnicodeDecodeError):
        raise UserError(f"{ref}: not a readable revision name") from None
    if not REVISION.match(revision):
        raise UserError(
            f"{ref}: {revision[:80]!r} is not a revision name; a ref must name a snapshot in {snapshots}"
        )
    target = os.path.realpath(snapshots / revision)
    if os.path.dirname(target) != os.path.realpath(snapshots):
        raise UserError(f"{ref}: snapshot {revision!r} lies outside the cache {snapshots}")
    return revision


def open_checkpoint(path_text: str) -> Checkpoint:
    """Locate the model behind PATH or ORG/NAME and read every safetensors header it has."""
    path = Path(path_text).expanduser()
    revision = None
    if path.exists():
        model = path.resolve().name if path.is_dir() else path.resolve().parent.name
    elif REPO_ID.match(path_text) and not path_text.startswith("."):
        path, revision = find_in_hub_cache(path_text)
        model = path_text
    else:
        raise UserError(f"hf:{path_text}: directory {path} does not exist; give a local model directory "
                        "(config.json + *.safetensors) or ORG/NAME of a model in the Hugging Face cache")
    if path.is_file():
        if path.suffix != ".safetensors":
            raise UserError(f"hf:{path_text}: {path} is not a .safetensors file or a model directory")
        files, layout, directory = [path], "single file", path.parent
    else:
        directory = path
        files, layout = safetensors_files(directory, path_text)
    tensors: dict[str, TensorEntry] = {}
    for file in files:
        tensors.update(read_header(file))
    if layout.startswith("sharded with index"):
        check_index_matches(directory, tensors)
    own = [*files, directory / INDEX_FILE, directory / "config.json", directory / SINGLE_FILE]
    return Checkpoint(model, directory, tensors, read_config(directory), revision, layout, own)


def safetensors_files(directory: Path, path_text: str) -> tuple[list[Path], str]:
    index = directory / INDEX_FILE
    if index.is_file():
        shards = sorted(set(read_index(index).values()))
        for shard in shards:
            if not (directory / shard).is_file():
                raise UserError(f"hf:{path_text}: shard {shard} is listed in {INDEX_FILE} but missing "
                                f"from {directory}")
        return [directory / s for s in shards], f"sharded with index ({len(shards)} shards)"
    if (directory / SINGLE_FILE).is_file():
        return [directory / SINGLE_FILE], "single file"
    found = sorted(directory.glob("*.safetensors"))
    if found:
        return found, f"{len(found)} safetensors file(s) without an index"
    pickles = sorted({p.name for pattern in PICKLE_NAMES for p in directory.glob(pattern)})
    if pickles:
        raise UserError(
            f"hf:{path_text}: {directory} has only PyTorch pickle weights ({', '.join(pickles[:3])}); "
            "anebench reads safetensors only (loading a pickle can run arbitrary code) - convert with "
            "safetensors.torch.save_file or download the model's safetensors files"
        )
    raise UserError(f"hf:{path_text}: no safetensors files in {directory} (expected {SINGLE_FILE} "
                    f"or sharded model-0000K-of-0000N.safetensors with {INDEX_FILE})")


def read_index(index: Path) -> dict[str, str]:
    """The index's weight_map: tensor name -> shard file name."""
    loaded = loads(read_input_bytes(index, "", 64 * MiB), str(index))
    weight_map = loaded.get("weight_map") if isinstance(loaded, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise UserError(f"{index}: not a valid safetensors index (no weight_map of tensor -> shard file)")
    for shard in weight_map.values():
        if Path(shard).name != shard:  # a shard outside the model directory is not a shard of it
            raise UserError(f"{index}: shard {shard!r} is not a file name in the model directory")
    return weight_map


def check_index_matches(directory: Path, tensors: dict[str, TensorEntry]) -> None:
    """A tensor the index puts in a shard must really be in that shard."""
    for name, shard in read_index(directory / INDEX_FILE).items():
        entry = tensors.get(name)
        if entry is None or entry.path.name != shard:
            raise UserError(f"{directory / INDEX_FILE}: lists tensor {name!r} in {shard}, "
                            "but that shard does not contain it")


def read_config(directory: Path) -> dict:
    config = directory / "config.json"
    if not config.is_file():
        return {}
    loaded = loads(read_input_bytes(config, "", 16 * MiB), str(config), constants=False)
    if not isinstance(loaded, dict):
        raise UserError(f"{config}: expected a JSON object")
    return loaded
