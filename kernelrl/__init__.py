"""kernelrl: make GPU kernels faster than the vendor libraries, measured honestly on your own GPU."""

__version__ = "0.1.0"
