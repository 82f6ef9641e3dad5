"""tf_ipmssl: semi-supervised learning with IPM-based GANs in TensorFlow 2 / Keras 3."""
import pathlib

import setuptools

ROOT = pathlib.Path(__file__).parent
version = {}
exec((ROOT / "tf_ipmssl" / "version.py").read_text(), version)

setuptools.setup(
    name="tf_ipmssl",
    version=version["__version__"],
    description="Semi-supervised learning with IPM-based GANs (Fisher, Sobolev, WGAN-GP, "
    "WGAN-clip critics) in TensorFlow 2 / Keras 3",
    long_description=(ROOT / "README.md").read_text(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.11",
    packages=setuptools.find_packages(include=["tf_ipmssl", "tf_ipmssl.*"]),
    # The absl programs; bin/setup is the shell bootstrap of a checkout, not a program.
    scripts=[str(p.relative_to(ROOT)) for p in sorted((ROOT / "bin").glob("*"))
             if p.is_file() and p.name != "setup"],
    install_requires=[
        # The CPU wheel keeps the default install light; GPU users install `tensorflow[and-cuda]`
        # on top (BUILD.md).
        "tensorflow-cpu>=2.16",
        "keras>=3.0",
        "tensorboard>=2.16",  # tf.summary needs it; tensorflow-cpu does not pull it in
        "tensorflow-datasets>=4.9",
        "absl-py>=1.0",
        "gin-config>=0.5",
        "numpy>=1.26",
        "scipy>=1.10",  # SVHN's original .mat files
    ],
    extras_require={
        # The tests start a two-node Ray cluster on this machine for the ray backend.
        "test": ["pytest>=7", "ray>=2.9"],
        "plots": ["matplotlib>=3.7"],
        # bin/sweep --backend=ray (docs/cluster.md).
        "ray": ["ray>=2.9"],
    },
)
