# lit configuration of ember's compiler tests (STYLE 8.6). Core lit only: works with LLVM's
# lit.py and with the pip `lit`.
import os
import platform
import shutil

import lit.formats

config.name = "ember"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".eir", ".cpp", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py",
                   "lit.site.cfg.py.in"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.ember_obj_root, "test", "lit")

# ember-compile, the lit programs, then FileCheck/not from LLVM; ptxas stays reachable.
config.environment["PATH"] = os.pathsep.join(
    [config.ember_tools_dir, config.ember_lit_bin_dir, config.llvm_tools_dir,
     config.environment.get("PATH", os.environ.get("PATH", ""))])
config.environment["FILECHECK_OPTS"] = "-enable-var-scope --allow-unused-prefixes=false"
# A user's dump settings must not leak into the compiler's output.
for var in ("EMBER_DUMP", "EMBER_DUMP_DIR"):
    config.environment.pop(var, None)

# "nvptx" and "cpu": the targets this build generates code for (REQUIRES: nvptx).
config.available_features.update(config.ember_targets)
config.available_features.update(f"{t}-target" for t in config.ember_targets)
# The host, for CPU assembly checks (REQUIRES: host-x86_64).
config.available_features.add("host-" + platform.machine())

# The examples, for end-to-end tests of the programs users run first (REQUIRES: examples; they
# are built only with EMBER_BUILD_EXAMPLES=ON).
if getattr(config, "ember_build_examples", False):
    config.available_features.add("examples")
config.substitutions.append(("%examples", os.path.join(config.ember_obj_root, "examples")))

# ptxas from the CUDA toolkit's usual home when it is not on the PATH.
if not shutil.which("ptxas", path=config.environment["PATH"]) and os.path.exists(
        "/usr/local/cuda/bin/ptxas"):
    config.environment["PATH"] += os.pathsep + "/usr/local/cuda/bin"

# %ptxas-verify: assembles PTX from stdin with ptxas (default -arch=sm_90) and fails on errors.
# Use it as `%if ptxas %{ ... | %ptxas-verify %}` so machines without CUDA skip it.
if shutil.which("ptxas", path=config.environment["PATH"]):
    config.available_features.add("ptxas")
    config.substitutions.append(
        ("%ptxas-verify", "sh " + os.path.join(config.test_source_root, "Inputs",
                                                "ptxas-verify.sh")))
