# -*- Python -*-

import os
import shutil
import subprocess
import sys

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "STAGE"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.stage_obj_root, "test")
config.excludes = ["Inputs", "Utils", "lib", "lit.cfg.py", "lit.site.cfg.py"]

config.environment["FILECHECK_OPTS"] = "-enable-var-scope"
config.substitutions.append(("%stage_src", config.stage_src_root))
config.substitutions.append(("%stage_obj", config.stage_obj_root))
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%skeleton", sys.executable + " " + os.path.join(config.test_source_root, "Utils", "skeleton.py")))
config.substitutions.append(("%collectives", sys.executable + " " + os.path.join(config.test_source_root, "Utils", "collectives.py")))
config.substitutions.append(("%examples", os.path.join(config.stage_src_root, "examples")))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP", "ASTRA_SIM_DIR"])
llvm_config.use_default_substitutions()

tool_dirs = [config.stage_tools_dir, config.llvm_tools_dir]
tools = ["stage-opt", "stage-translate", "stage-trace", "stage-explore", "FileCheck", "not", "split-file", "mlir-opt"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# Headless Chromium opens the HTML report (scripts/setup.sh --tests installs it).
if shutil.which("chromium"):
    config.available_features.add("chromium")

# ASTRA-sim, the traces' consumer, where the workplace provides it
# (../shared/astra-sim next to the project, or $ASTRA_SIM_DIR) and its
# binaries run.
astra_sim = os.environ.get("ASTRA_SIM_DIR") or os.path.realpath(
    os.path.join(config.stage_src_root, "..", "shared", "astra-sim"))
simulate = os.path.join(astra_sim, "simulate.sh")
simulator = os.path.join(astra_sim, "bin", "AstraSim_Analytical_Congestion_Unaware")
if os.path.exists(simulate) and os.path.exists(simulator):
    try:
        probe = subprocess.run([simulator, "--help"], capture_output=True, timeout=30)
        if b"error while loading shared libraries" not in probe.stderr:
            config.available_features.add("astra-sim")
            config.substitutions.append(("%simulate", simulate))
    except (OSError, subprocess.TimeoutExpired):
        pass
