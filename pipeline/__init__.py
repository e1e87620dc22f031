"""The TFX DAG (pipeline.py) and every knob of it (configs.py)."""
