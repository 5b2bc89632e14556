"""Preflight: not macOS, Rosetta (sysctl.proc_translated), Intel Mac, old macOS — each with its message."""

from __future__ import annotations

import ctypes
import errno
import sys

import pytest

from anebench.cli import main
from anebench.engines.coreml_engine import CoreMLEngine
from anebench.errors import UserError
from anebench.system import host, preflight
from fakehost import LINUX_FACTS, mac_facts, state_platform
from fakepipeline import state_executor


class FakeLibc:
    """sysctlbyname as libSystem has it: fills an int buffer, or returns -1 with errno set."""

    def __init__(self, translated: int | None = None, error: int = errno.ENOENT):
        self.translated, self.error, self.calls = translated, error, []

    def sysctlbyname(self, name, oldp, oldlenp, newp, newlen):
        self.calls.append((name, oldlenp.contents.value, newp, newlen.value))
        if self.translated is None:
            ctypes.set_errno(self.error)
            return -1
        oldp.contents.value = self.translated
        return 0


def fake_mac(monkeypatch, machine: str, translated: str | None, version=(15, 3)):
    """A Mac as the preflight sees it: platform, machine name, Rosetta (sysctl.proc_translated = "1"), macOS
    version, stated as the active host's platform facts."""
    chip = None if machine == "x86_64" and translated is None else "Apple M2"
    facts = mac_facts(version, chip, machine, rosetta=translated == "1")
    return state_platform(monkeypatch, facts).platform()


def no_child_process(name):
    raise AssertionError(f"the sysctl command was run for {name}; sysctlbyname had answered")


def test_rosetta_is_read_in_process_with_an_int_buffer():
    fake = FakeLibc(1)
    assert host.translated_by_rosetta("darwin", fake, sysctl_command=no_child_process)
    assert fake.calls == [(b"sysctl.proc_translated", ctypes.sizeof(ctypes.c_int), None, 0)]
    assert host.proc_translated(FakeLibc(0)) == 0 and host.proc_translated(FakeLibc(1)) == 1


def test_no_such_sysctl_is_native_without_asking_the_command():
    libc = FakeLibc(None)  # ENOENT: a kernel without Rosetta
    assert host.proc_translated(libc) == 0
    assert not host.translated_by_rosetta("darwin", libc, sysctl_command=no_child_process)


@pytest.mark.parametrize(
    "libc", [FakeLibc(None, error=errno.EPERM), object()], ids=["EPERM", "no sysctlbyname"]
)
def test_the_sysctl_command_answers_where_sysctlbyname_cannot(libc):
    assert host.proc_translated(libc) is None
    # from `sysctl -n sysctl.proc_translated`, the child process
    assert host.translated_by_rosetta("darwin", libc, sysctl_command={"sysctl.proc_translated": "1"}.get)
    # the command cannot run either: not translated
    assert not host.translated_by_rosetta("darwin", libc, sysctl_command=lambda name: None)


def test_real_libc_off_macos_has_no_answer():
    if sys.platform == "darwin":
        pytest.skip(reason="this checks a libc without sysctlbyname")
    assert host.proc_translated() is None and host.translated_by_rosetta(sys.platform) is False


def test_not_macos(monkeypatch):
    state_platform(monkeypatch, LINUX_FACTS)
    problem = preflight.prediction_problem("Core ML")
    assert problem.startswith("Core ML prediction needs macOS (this host runs Linux)")
    assert "anebench build" in problem and preflight.ane_problem("Core ML") == problem
    preflight.check_native_host()  # no Rosetta on Linux: nothing to stop


def test_rosetta_is_detected_by_proc_translated_not_machine_names(monkeypatch):
    fake_mac(monkeypatch, machine="x86_64", translated="1")  # both machine names say x86_64 here
    assert preflight.under_rosetta() and preflight.apple_silicon() and not preflight.intel_mac()
    problem = preflight.prediction_problem("Core ML")
    assert "Rosetta" in problem and "unreachable" in problem and "arm64" in problem
    with pytest.raises(UserError, match="Rosetta"):
        preflight.check_native_host()
    assert not CoreMLEngine().available()


def test_run_under_rosetta_stops_before_any_work(monkeypatch, capsys):
    fake_mac(monkeypatch, machine="x86_64", translated="1")
    started = []
    state_executor(monkeypatch, measure=lambda *a, **k: started.append(a))
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--engine", "numpy", "--workload", "lm_head:64x256", "--no-save"])
    assert exit_info.value.code == 2 and started == []
    assert "Rosetta" in capsys.readouterr().err


def test_intel_mac_has_no_neural_engine(monkeypatch):
    fake_mac(monkeypatch, machine="x86_64", translated=None)  # no such sysctl: not translated
    assert preflight.intel_mac() and not preflight.under_rosetta()
    assert preflight.prediction_problem("Core ML") is None
    assert preflight.ane_problem("Core ML") == preflight.INTEL_MESSAGE.format(framework="Core ML")
    assert CoreMLEngine().devices() == ["gpu", "cpu", "all"]
    with pytest.raises(UserError, match="Intel CPU and no Neural Engine"):
        CoreMLEngine().prepare(None, "ane")


def test_native_apple_silicon(monkeypatch):
    fake_mac(monkeypatch, machine="arm64", translated="0")
    assert preflight.apple_silicon() and preflight.ane_problem("Core ML") is None
    assert CoreMLEngine().devices() == ["ane", "gpu", "cpu", "all"]
    preflight.check_native_host()


def test_macos_older_than_15(monkeypatch):
    fake_mac(monkeypatch, machine="arm64", translated="0", version=(14, 5))
    problem = preflight.prediction_problem("Core ML")
    assert "macOS 14.5" in problem and "macOS 15" in problem


@pytest.mark.parametrize("chip,count", [
    ("Apple M2 Ultra", 2), ("Apple M1 Ultra", 2), ("Apple M4 Pro", 1), ("Apple M9", 1),
    ("Apple M9 Ultra", 2), (None, 0), ("Intel(R) Xeon(R)", 0),
])
def test_neural_engine_count(chip, count):
    assert preflight.neural_engine_count(chip) == count


@pytest.mark.macos
def test_macos_rosetta_signal_is_the_kernel_flag(monkeypatch):
    """Under `arch -x86_64` the machine name says x86_64 (what the published tool compares), and only
    sysctl.proc_translated tells translation apart; our check reads exactly that flag."""
    import shutil
    import subprocess

    assert host.sysctl("sysctl.proc_translated") in ("0", None)  # this (native) interpreter
    assert host.proc_translated() == 0  # and in process, through sysctlbyname
    rosetta = (
        shutil.which("arch")
        and subprocess.run(["arch", "-x86_64", "/usr/bin/true"], check=False).returncode == 0
    )
    if not rosetta:
        pytest.skip(reason="Rosetta 2 is not installed on this runner")
    probe = ("import platform, subprocess; print(platform.machine(), subprocess.run(['sysctl', '-n', "
             "'sysctl.proc_translated'], capture_output=True, text=True).stdout.strip())")
    out = subprocess.run(["arch", "-x86_64", "/usr/bin/python3", "-c", probe], capture_output=True, text=True,
                         check=True)
    machine, translated = out.stdout.split()
    assert (machine, translated) == ("x86_64", "1")
    answers = {"sysctl.proc_translated": translated}
    assert host.translated_by_rosetta("darwin", object(), sysctl_command=answers.get)  # sysctlbyname failed
    facts = mac_facts(machine=machine, rosetta=True)
    assert preflight.under_rosetta(facts) and "Rosetta" in preflight.prediction_problem("Core ML", facts)
    probe = ("import ctypes, ctypes.util; v = ctypes.c_int(0); s = ctypes.c_size_t(4); "
             "lib = ctypes.CDLL(ctypes.util.find_library('c')); "
             "print(lib.sysctlbyname(b'sysctl.proc_translated', ctypes.pointer(v), ctypes.pointer(s), None, "
             "ctypes.c_size_t(0)), v.value)")
    out = subprocess.run(["arch", "-x86_64", "/usr/bin/python3", "-c", probe], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["0", "1"]  # Apple's in-process recipe sees translation too
