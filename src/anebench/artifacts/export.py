"""Exporting a cached bundle: copied whole into a folder of the user's, atomically, never replacing a
file, device or FIFO of the same name."""

from __future__ import annotations

import shutil
from pathlib import Path

from ..errors import SettingError

SETTING = "out"  # the setting that names the export folder (the CLI maps it to its flag)


def check_bundle_dir(out: Path) -> None:
    """``out`` is a folder for the bundle: a device, FIFO or file there is refused, not replaced."""
    if out.is_symlink() and not out.exists():
        raise SettingError(SETTING, f"{out}: a dangling symlink; give a directory")
    if out.exists() and not out.is_dir():
        kind = "a file" if out.is_file() else "not a directory (a device, FIFO or socket)"
        raise SettingError(SETTING, f"{out}: is {kind}; give a directory")


def copy_bundle(package: Path, out: Path) -> Path:
    """Copy the cached bundle into ``out`` (a directory), atomically: a temporary name, then a rename."""
    check_bundle_dir(out)
    target = out / package.name
    staging = out / f".{package.name}.partial"
    previous = out / f".{package.name}.previous"  # the old bundle stays whole until the new one is in place
    try:
        out.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(package, staging)
        shutil.rmtree(previous, ignore_errors=True)
        if target.exists():
            target.rename(previous)
        staging.rename(target)
    except OSError as exc:
        if previous.exists() and not target.exists():
            previous.rename(target)
        raise SettingError(SETTING, f"{out}: cannot copy the bundle there ({exc.strerror or exc})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(previous, ignore_errors=True)
    return target


__all__ = ["check_bundle_dir", "copy_bundle"]
