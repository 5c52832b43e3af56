from kernelrl.build.builder import Builder, BuildRequest, BuildResult, LocalBuilder
from kernelrl.build.toolchain import Toolchain, ToolchainError

__all__ = ["Builder", "BuildRequest", "BuildResult", "LocalBuilder", "Toolchain", "ToolchainError"]
