"""Custom TFX components of this pipeline."""
