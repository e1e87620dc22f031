"""The TFX DAG (pipeline.py), its knobs (knobs.py) and fixed names
(constants.py), and how every process that runs it starts (startup.py)."""
