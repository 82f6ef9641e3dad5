"""The classifier a run exports and what serves it: `export` writes the SavedModel classifier
(Φ + S, not the GAN; the trainer at a run's end, bin/export), `prediction` classifies image
files with it from the SavedModel alone (bin/predict). Nothing here imports the training.
"""
