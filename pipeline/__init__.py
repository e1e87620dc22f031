"""The TFX pipeline: its DAG, its configuration and its record format."""
