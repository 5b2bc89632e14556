"""No module outside engines/ and artifacts/ names Core ML: the suites, the CLI and the reports ask an
engine for its capabilities (``Engine.plans_bundles``, ``token_batched``, ``call_mitigations``,
``decode_chunks``, ``self_check``) and the artifacts registry for its builders, so a second engine with
bundles needs no edit elsewhere (issue 23, item 4)."""

from __future__ import annotations

import re
from pathlib import Path

import anebench

SOURCE = Path(anebench.__file__).parent
ALLOWED = ("engines", "artifacts")  # the packages whose business Core ML is
# Core ML by name, its tools and its files: "coreml", "core ml", "coremltools", ".mlmodel", ".mlpackage"
NAMES = re.compile(r"core[ _-]?ml|mlmodel|mlpackage", re.IGNORECASE)


def named_outside(root: Path) -> list[str]:
    """file:line: text, for each line (or file name) outside ALLOWED that names Core ML."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if relative.parts[0] in ALLOWED:
            continue
        if NAMES.search(str(relative)):
            found.append(f"{relative}: the file's name")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if NAMES.search(line):
                found.append(f"{relative}:{number}: {line.strip()}")
    return found


def test_no_module_outside_engines_and_artifacts_names_core_ml():
    found = named_outside(SOURCE)
    assert not found, "Core ML named outside engines/ and artifacts/:\n" + "\n".join(found)


def test_the_scan_finds_each_spelling_and_skips_the_allowed_packages(tmp_path):
    (tmp_path / "engines").mkdir()
    (tmp_path / "engines" / "ok.py").write_text("import coremltools\n")
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "bad.py").write_text("x = 1\nname = 'coreml'\n# Core ML\n# a .mlpackage\n# CORE_ML\n")
    (tmp_path / "report_coreml.py").write_text("")
    found = named_outside(tmp_path)
    assert found == [
        "cli/bad.py:2: name = 'coreml'",
        "cli/bad.py:3: # Core ML",
        "cli/bad.py:4: # a .mlpackage",
        "cli/bad.py:5: # CORE_ML",
        "report_coreml.py: the file's name",
    ]
