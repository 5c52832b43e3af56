from kernelrl.verify.checks import (CheckOutcome, GuardedBuffer, compare_output, make_inputs, ones_density,
                                    tolerance)

__all__ = ["CheckOutcome", "GuardedBuffer", "compare_output", "make_inputs", "ones_density", "tolerance"]
