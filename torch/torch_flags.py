"""torch/torch_flags.py: what configure needs to build loom._c10d for the
Python running this (m4/loom_torch.m4): four lines, torch's version,
Python's and torch's include directories (-isystem: their headers' own
warnings are not ours), pybind11's ABI defines (shell-quoted for make;
they must be torch's own for a class to derive from torch's binding of
ProcessGroup), the -L flags of torch's libraries.
Exits non-zero when torch cannot be imported."""
import sysconfig

import torch
import torch._C as c
import torch.utils.cpp_extension as x


def define(name: str, value: str) -> str:
    return "'-D%s=\"%s\"'" % (name, value)


inc = [sysconfig.get_paths()["include"]] + x.include_paths()
print(torch.__version__)
print(" ".join("-isystem " + d for d in inc))
print(" ".join([define("PYBIND11_COMPILER_TYPE", c._PYBIND11_COMPILER_TYPE),
                define("PYBIND11_STDLIB", c._PYBIND11_STDLIB),
                define("PYBIND11_BUILD_ABI", c._PYBIND11_BUILD_ABI),
                "-D_GLIBCXX_USE_CXX11_ABI=%d" % int(c._GLIBCXX_USE_CXX11_ABI)]))
print(" ".join("-L" + d for d in x.library_paths()))
