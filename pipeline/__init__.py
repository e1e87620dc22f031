"""The TFX DAG (pipeline.py), its knobs (knobs.py) and fixed names
(configs.py)."""
