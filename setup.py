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
    # The absl programs as ipmssl-<program> commands (tf_ipmssl/programs.py); bin/setup is
    # the shell bootstrap of a checkout, not a program.
    entry_points={"console_scripts": [
        f"ipmssl-{p.name} = tf_ipmssl.programs:{p.name}"
        for p in sorted((ROOT / "bin").glob("*")) if p.is_file() and p.name != "setup"]},
    # TensorFlow comes from one extra, `cpu` or `gpu` (bin/setup takes `cpu`; bin/setup --gpu
    # takes `gpu`): tensorflow-cpu and tensorflow both own the `tensorflow` package, so an
    # environment must hold exactly one of them.
    install_requires=[
        "keras>=3.0",
        "tensorboard>=2.16",  # tf.summary needs it; tensorflow-cpu does not pull it in
        "tensorflow-datasets>=4.9",
        "absl-py>=1.0",
        "gin-config>=0.5",
        "numpy>=1.26",
        "scipy>=1.10",  # SVHN's original .mat files
    ],
    extras_require={
        "cpu": ["tensorflow-cpu>=2.16"],
        # TensorFlow with the CUDA libraries it needs, from PyPI (BUILD.md, "GPU").
        "gpu": ["tensorflow[and-cuda]>=2.16"],
        # The tests start a two-node Ray cluster on this machine for the ray backend;
        # pytest.ini runs them in two processes (pytest-xdist); Pillow writes the BMP, GIF
        # and WebP files of the image-folder tests (TensorFlow decodes them, has no encoder).
        "test": ["pytest>=7", "pytest-xdist>=3", "ray>=2.9", "pillow>=9"],
        "plots": ["matplotlib>=3.7"],
        # bin/sweep --backend=ray (docs/cluster.md).
        "ray": ["ray>=2.9"],
        # bin/export --format=onnx (tf2onnx converts, onnx writes) and bin/predict on an ONNX
        # export (onnxruntime serves it without TensorFlow).
        "onnx": ["tf2onnx>=1.16", "onnx>=1.16", "onnxruntime>=1.17"],
        # bin/predict on a LiteRT export (its interpreter serves it without TensorFlow);
        # TensorFlow's own converter writes it.
        "litert": ["ai-edge-litert>=1.2"],
    },
)
