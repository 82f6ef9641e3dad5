"""The miniature study of the paper's Tables 1-3 on Fashion-MNIST with 100 labels (README.md)."""
