"""Triton's own switches for code written for an older Triton than the host's, by the Triton
version the task's environment pins (env.json).

Triton 3.0 (mid-2024) made a kernel's read of a module-level Python value that is not a
`tl.constexpr` a compilation error ("Cannot access global variable ... from within @jit'ed
function"), with `TRITON_ALLOW_NON_CONSTEXPR_GLOBALS=1` as its escape hatch; code of the
Triton 2 era reads such globals freely. Measured on flash-linear-attention: 23 of the 35
references pinned to Triton 2.1 or 2.2 failed to compile on the GPU host's Triton 3.6, and
#041f2a47e4's `chunk_gla` (its backward reads `inv_ln2`, a plain float) compiles forward and
backward for sm_90 with the switch on (CPU, compile-only, 2026-12-07). A task pinned to a
Triton that already refused such reads gets no switch: Liger-Kernel #1266's gold (2026, a
plain `LOG2_E`) failed on the Triton of its day too, and #1275 is the PR that fixed it, whose
base must keep failing.

Triton 3.0 also moved libdevice's functions out of `tl.math` (`tl.math.pow` was one); the
second switch has the test plugin and the workload harness put them back (`eval.triton_names`).

The switches go to every test run of the task (base, gold, prediction) and to its workload
harness, so all variants compile under the same rules.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from curation.taskdir import TaskDir, TaskFile

# (the first Triton that needs the switch's help, the switch): a task pinned below gets it
# (TPB_TRITON2_MATH: Triton 2's `tl.math` names, `eval.triton_names`)
# (TPB_TRITON_DNS_CONSTEXPR: a constexpr parameter listed in do_not_specialize, refused since
# Triton 3.5, `eval.triton_names.constexpr_over_dns`)
SWITCHES: tuple[tuple[Version, dict[str, str]], ...] = (
    (Version("3.0"), {"TRITON_ALLOW_NON_CONSTEXPR_GLOBALS": "1", "TPB_TRITON2_MATH": "1"}),
    (Version("3.5"), {"TPB_TRITON_DNS_CONSTEXPR": "1"}),
)


def pinned_triton(tdir: TaskDir) -> str | None:
    """The Triton version the task's environment pins (env.json; None without one)."""
    from envbuild.model import EnvSpec

    spec = tdir.load(TaskFile.ENV, EnvSpec)
    return spec.triton.value if spec is not None and spec.triton.value else None


def compat_env(pin: str | None) -> dict[str, str]:
    """The switches for code written for Triton `pin` (none without a pin, or for one that
    cannot be read)."""
    try:
        version = Version(pin) if pin else None
    except InvalidVersion:
        version = None
    if version is None:
        return {}
    env: dict[str, str] = {}
    for first, switch in SWITCHES:
        if version < first:
            env.update(switch)
    return env


def task_compat_env(tdir: TaskDir) -> dict[str, str]:
    """`compat_env` of the task's pinned Triton."""
    return compat_env(pinned_triton(tdir))
